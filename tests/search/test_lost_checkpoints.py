"""A task whose sandboxes lost their node with its disk: the checkpoints sealed there are
gone, so an attempt in flight cannot continue from its last turn.

A root is restarted from checkpoint 0 by a new root that names it (`restarts`), with the
reason on the lost one; nothing finished is re-run, and `--resume` restarts nothing twice.
A branch, whose fork point went with the node too, ends in error (`lost`), never as a
failed test. The node's death is played by a `TaskSandboxes` of the test's own: this
machine's sandboxes, and at the chosen call a death that takes every checkpoint but 0.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sprout.runfolder import RunFolder
from sprout.sandbox import Observation
from sprout.search import Progress, RunSettings, parse_methods, run_tasks
from sprout.search.sandboxes import LocalSandboxes
from sprout.task import Task
from sprout.tasks import load_native
from sprout.tree import Attempt
from sprout.verify import Verdict
from sprout.workspace import CheckpointLost, Fork, Sealed, Workspace, WorkspaceError
from tests.conftest import require_host_image
from tests.taskfolders import TRAPPED, two_edits_task


class DiskLosingSandboxes:
    """This machine's sandboxes, until shell call number `dies_at` of the run: that call
    fails as a node's death does, and takes every checkpoint sealed before it: only
    checkpoint 0 (built again, as on a new node) and what is sealed after can be forked."""

    def __init__(self, run: RunFolder, dies_at: int) -> None:
        self._local = LocalSandboxes(run.layers)
        self._dies_at = dies_at
        self._calls = 0
        self._gone: set[str] = set()
        """Checkpoints sealed so far: the node's, until it dies."""
        self._lock = threading.Lock()
        self.dead = False

    def base(self, task: Task, *, replays: bool) -> str:
        return self._local.base(task, replays=replays)

    def workspace(self, task: Task) -> Workspace:
        return _LosingWorkspace(self, self._local.workspace(task))

    def verify(self, task: Task, checkpoint: str, base: str) -> Verdict:
        self.check(checkpoint)
        return self._local.verify(task, checkpoint, base)

    def moves(self, task: Task) -> int:
        return int(self.dead)

    def release(self, task: Task) -> None:
        self._local.release(task)

    def check(self, checkpoint: str) -> None:
        if self.dead and checkpoint in self._gone:
            raise CheckpointLost(f"checkpoint {checkpoint}: lost with its node")

    def sealed(self, checkpoint: str) -> None:
        with self._lock:
            if not self.dead:
                self._gone.add(checkpoint)

    def call(self) -> None:
        """One shell call; the one that meets the node's death fails."""
        with self._lock:
            self._calls += 1
            if self._calls == self._dies_at and not self.dead:
                self.dead = True
                raise WorkspaceError("node n1 died")


class _LosingWorkspace:
    def __init__(self, sandboxes: DiskLosingSandboxes, local: Workspace) -> None:
        self._sandboxes = sandboxes
        self._local = local

    @contextmanager
    def fork(self, checkpoint: str) -> Iterator[Fork]:
        self._sandboxes.check(checkpoint)
        with self._local.fork(checkpoint) as fork:
            yield _LosingFork(self._sandboxes, fork)


class _LosingFork:
    def __init__(self, sandboxes: DiskLosingSandboxes, fork: Fork) -> None:
        self._sandboxes = sandboxes
        self._fork = fork

    def check_command(self, command: str) -> str | None:
        return self._fork.check_command(command)

    def run(self, command: str, timeout: float) -> Observation:
        self._sandboxes.call()
        found: Observation = self._fork.run(command, timeout)
        return found

    def seal(self) -> Sealed:
        sealed = self._fork.seal()
        self._sandboxes.sealed(sealed.checkpoint)
        return sealed


def play(
    tmp_path: Path,
    methods: str,
    sandboxes_for: type | None,
    model: str = "oracle-noise:p=0",
    **options: object,
) -> tuple[RunFolder, dict, str]:
    """`methods` on the two-edit task, one sandbox at a time; (run, results, log)."""
    require_host_image()
    task = load_native(two_edits_task(tmp_path / "tasks"))
    run = RunFolder.resume(tmp_path / "run") if (tmp_path / "run").exists() else None
    run = run or RunFolder.create_new(tmp_path / "run")
    sandboxes = sandboxes_for(run, **options) if sandboxes_for else None
    settings = RunSettings(model, parse_methods(methods, rounds=(1,)), workers=1)
    log = io.StringIO()
    content = run_tasks([task], run, settings, Progress(log), sandboxes=sandboxes)
    return run, content, log.getvalue()


def attempts(run: RunFolder) -> list[Attempt]:
    return run.tree.attempts("two-edits")


def test_a_root_whose_checkpoint_died_with_its_node_restarts_from_checkpoint_0(
    tmp_path: Path,
) -> None:
    # the second root's second call (each root makes 3): the first root is finished, and
    # the second has one turn sealed on the node that dies
    run, content, log = play(tmp_path, "pass@2", DiskLosingSandboxes, dies_at=5)
    first, lost, restart = attempts(run)
    assert first.reward == 1.0 and first.restarts is None
    assert (lost.status, lost.fault, lost.reward) == ("error", "lost", None)
    assert "lost with its node" in (lost.end_reason or "")
    assert len(run.tree.own_turns(lost)) >= 1, "the lost root's turns stay as recorded"
    assert restart.kind == "root" and restart.restarts == lost.id
    assert restart.reward == 1.0 and restart.base_checkpoint == first.base_checkpoint
    assert [t.index for t in run.tree.own_turns(restart)] == [1, 2, 3], "from checkpoint 0"
    assert f"restarted from checkpoint 0 as attempt {restart.id}" in log
    summary = content["methods"]["pass@2"]
    assert summary["pass_at_1"] == 1.0, "the two roots that count: the first and the restart"
    assert content["tasks"]["two-edits"]["pass@2"]["faults"] == {"lost": 1}
    assert [s["status"] for s in run.tree.schedules()] == ["done"]
    run.close()

    # a resume restarts nothing again, and replays nothing finished
    run, _, _ = play(tmp_path, "pass@2", None)
    assert [a.id for a in attempts(run)] == [first.id, lost.id, restart.id]
    run.close()


def test_a_branch_whose_fork_point_died_with_its_node_ends_in_error_not_failure(
    tmp_path: Path,
) -> None:
    # the trap oracle fails its root (3 calls), so sprout branches from it; the node dies
    # at the branch's first call, taking the root's checkpoints with it
    run, content, _ = play(tmp_path, "sprout", DiskLosingSandboxes, TRAPPED, dies_at=4)
    root, branch = attempts(run)[:2]
    assert root.kind == "root" and root.reward == 0.0
    assert branch.kind == "branch" and (branch.status, branch.fault) == ("error", "lost")
    assert branch.reward is None, "an error, never a failed test"
    (schedule,) = run.tree.schedules()
    assert schedule["status"] == "error" and "lost" in (schedule["error"] or "")
    assert content["tasks"]["two-edits"]["sprout"]["faults"] == {"lost": 1}
    run.close()
