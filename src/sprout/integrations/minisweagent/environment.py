"""sprout's sandbox as a mini-swe-agent environment: its `environment_class`.

    environment:
      environment_class: sprout.integrations.minisweagent.environment.SproutEnvironment
      task: tasks/two-edits        # a sprout task folder (or TB2 / Harbor layout)
      run: runs/two-edits          # the sprout run folder it writes

Each environment is one attempt of that task in the run folder: checkpoint 0 is the
task's set-up environment, built as `sprout run` builds it; every `execute` runs in the
jail on a fork of it; and every step of the agent seals a checkpoint, a turn of the
attempt, so `sprout shell RUN ATTEMPT:k` opens the files after step k and `sprout view
RUN` shows the steps. When the agent submits (mini-swe-agent's sentinel, exit code 0)
the task's verifier runs on a throw-away fork and its reward is the attempt's.

A step is what the agent runs between two renderings of its templates: `DefaultAgent`
asks `get_template_vars` once per step, after all the step's actions ran, to format
their observations, so that is where the step's checkpoint is sealed. The environment
sees commands and outputs, never the model's replies: those are in mini-swe-agent's
trajectory, and `sprout run --from-trajectories` joins the two to branch the attempt.
"""

from __future__ import annotations

import platform
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from minisweagent.exceptions import Submitted
from pydantic import BaseModel, ConfigDict, Field

from sprout.agent.mini_dialect import in_environment, mini_output, submits
from sprout.agent.turn_records import call_record
from sprout.errors import SproutError
from sprout.integrations.command_turns import commit_command_turn
from sprout.integrations.minisweagent import package
from sprout.integrations.minisweagent.trajectory import agent_end
from sprout.runfolder import RunFolder
from sprout.sandbox import SandboxError
from sprout.task import Task
from sprout.tasks.discover import load_one_task
from sprout.tasksandbox import TaskSandboxService
from sprout.tree import AttemptStatus, CallRecord, Fault
from sprout.verify import ResultsError

METHOD = "mini-swe-agent"
"""The method the run records the environment's attempts under."""


class SproutEnvironmentError(SproutError, ValueError):
    """An environment config sprout cannot start from: one line naming the key."""


class SproutEnvironmentConfig(BaseModel):
    """The `environment` section's keys; mini-swe-agent's own are `cwd`, `env`, `timeout`."""

    model_config = ConfigDict(extra="forbid")
    task: str
    """A sprout task folder: its image, set-up and hidden tests."""
    run: str
    """The run folder to write: new, or one this environment's earlier attempts wrote."""
    cwd: str = ""
    """Where each command starts; empty: the task's working directory."""
    env: dict[str, str] = Field(default_factory=dict)
    timeout: int = 30


class SproutEnvironment:
    """mini-swe-agent's `Environment` protocol over one sprout sandbox, one attempt."""

    def __init__(self, loaded: Task | None = None, /, **kwargs: Any) -> None:
        """mini-swe-agent passes the `environment` section's keys; a batch that loaded the
        task already passes it first (`for_task`)."""
        ours = set(SproutEnvironmentConfig.model_fields)
        self.not_applied = sorted(set(kwargs) - ours)
        _check_keys(self.not_applied)
        self.config = SproutEnvironmentConfig(**{k: v for k, v in kwargs.items() if k in ours})
        self.task = load_one_task(self.config.task) if loaded is None else loaded
        self._open()

    @classmethod
    def for_task(cls, task: Task, run: Path, **kwargs: Any) -> SproutEnvironment:
        """The environment of a task already loaded (a batch's), its run folder `run`."""
        return cls(task, task=str(task.path), run=str(run), **kwargs)

    def _open(self) -> None:
        """The run folder, checkpoint 0, the attempt and its sandbox."""
        self._stack: ExitStack | None = ExitStack()
        self.run = RunFolder.create(self.config.run)
        stack = self._stack
        stack.callback(self.run.close)
        try:
            self._service = TaskSandboxService(self.run.layers)
            self.base_checkpoint = self._service.base_checkpoint(self.task, replays=False)
            tree = self.run.tree
            tree.add_task(self.task.id, self.task.model_dump(mode="json"))
            tree.start_schedule(self.task.id, METHOD)
            self.attempt = tree.root(self.task.id, [], self.base_checkpoint, method=METHOD)
            workspace = self._service.workspace(self.task)
            self._fork = stack.enter_context(workspace.fork(self.base_checkpoint))
        except BaseException:
            stack.close()
            raise
        self._step: list[CallRecord] = []
        self._turns = 0
        self._step_started = time.monotonic()

    def execute(
        self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None
    ) -> dict[str, Any]:
        """One command in the jail; the sentinel ends the attempt as mini-swe-agent's
        environments end it, by raising `Submitted` with the submission."""
        if not self._step:
            self._step_started = time.monotonic()
        command = str(action.get("command", ""))
        limit = timeout or self.config.timeout
        where = cwd or self.config.cwd or self.task.workdir
        seen = self._fork.run(in_environment(command, where, self.config.env), timeout=limit)
        record = call_record(command, seen)
        self._step.append(record)
        if submits(record):
            self._submit(record)
        return mini_output(record, limit)

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """The config, the machine's `uname` and `kwargs`, as mini-swe-agent's container
        environments give them (not the host's environment variables); the end of a step."""
        self._seal_step()
        return {**self.config.model_dump(), **platform.uname()._asdict(), **kwargs}

    def serialize(self) -> dict[str, Any]:
        """What a trajectory saves of the environment: its config, and where its run is."""
        kind = f"{type(self).__module__}.{type(self).__name__}"
        return {
            "info": {
                "config": {
                    "environment": self.config.model_dump(mode="json"),
                    "environment_type": kind,
                },
                "sprout": {"run": str(Path(self.config.run)), "attempt": self.attempt.id},
            }
        }

    def cleanup(self, exit_status: str | None = None, exception: str = "") -> None:
        """The last step sealed, the sandbox and the run folder closed. An attempt that did
        not submit ends as mini-swe-agent's `exit_status` says (`agent_end`: a limit, or an
        exception's name, an `error` and never a failure); with none to tell (mini-swe-agent
        calls this with nothing), it ends `limit` and its trajectory says why."""
        if self._stack is None:
            return
        try:
            self._seal_step()
            if self.run.tree.attempt(self.attempt.id).status == "running":
                status: AttemptStatus = "limit"
                fault: Fault | None = None
                reason = "stopped without submitting"
                if exit_status is not None:
                    status, fault, reason = agent_end(exit_status, {"exception_str": exception})
                said = f"mini-swe-agent's agent: {reason} (see its trajectory)"
                self.run.tree.finish_attempt(self.attempt.id, status, said, fault=fault)
                self._finish_schedule()
        finally:
            stack, self._stack = self._stack, None
            stack.close()

    def __del__(self) -> None:
        if getattr(self, "_stack", None) is not None:
            self.cleanup()

    def _seal_step(self) -> None:
        """The calls since the last step, sealed as the attempt's next turn."""
        if not self._step:
            return
        calls, self._step = tuple(self._step), []
        sealed = self._fork.seal()
        self._turns += 1
        duration_s = time.monotonic() - self._step_started
        commit_command_turn(self.run.tree, self.attempt.id, self._turns, calls, sealed, duration_s)

    def _submit(self, record: CallRecord) -> None:
        """Seal, verify and raise mini-swe-agent's `Submitted`, as its environments do."""
        self._seal_step()
        tree = self.run.tree
        tree.finish_attempt(self.attempt.id, "submitted", f"step {self._turns} submitted")
        checkpoint = tree.checkpoint(tree.attempt(self.attempt.id))
        try:
            verdict = self._service.verify(self.task, checkpoint, self.base_checkpoint)
        except (SandboxError, ResultsError) as error:  # no verdict: the verifier's error
            tree.verifier_failed(self.attempt.id, f"verifier: {error}")
        else:
            tree.set_outcome(
                self.attempt.id, verdict.reward, verdict.diagnostics.to_json(), verdict.patch
            )
        self._finish_schedule()
        submission = "".join(record.output.lstrip().splitlines(keepends=True)[1:])
        raise Submitted(
            {
                "role": "exit",
                "content": submission,
                "extra": {"exit_status": "Submitted", "submission": submission},
            }
        )

    def _finish_schedule(self) -> None:
        tree = self.run.tree
        mine = [a for a in tree.attempts(self.task.id) if a.method == METHOD]
        resolved = any(a.passed for a in mine)
        tree.finish_schedule(self.task.id, METHOD, resolved=resolved, error=None)


def _check_keys(keys: list[str]) -> None:
    """Keys of mini-swe-agent's other environments (a container's `image`, `interpreter`,
    `run_args`...) are taken and said not to apply: calls run in sprout's jail under the
    task's own image, limits and network. Any other key is a typo, refused in one line."""
    known = package.section_keys("environment")
    for key in keys:
        if key not in known:
            raise SproutEnvironmentError(
                f"environment.{key}: not a key of sprout's environment (task, run, cwd, env, "
                "timeout) nor of mini-swe-agent's (a typo?)"
            )
    if keys:
        print(
            f"sprout: environment.{', environment.'.join(keys)}: not applied (every call runs "
            "in sprout's jail, on the task's own image, limits and network policy)",
            file=sys.stderr,
        )
