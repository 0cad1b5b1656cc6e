"""Running a task's hidden tests on a throw-away fork of an attempt's final checkpoint."""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sprout.edits import is_noise
from sprout.images.machine_network import index_settings
from sprout.sandbox import LayerStore, Sandbox
from sprout.task import Task
from sprout.tasks.setup.phase_users import verifier_run_as
from sprout.tasks.setup.withheld import put_back
from sprout.verify.git_history import restore_history
from sprout.verify.r2egym_grading import grade as grade_r2egym
from sprout.verify.results import read_results
from sprout.verify.swebench_fork_grading import grade as grade_fork
from sprout.verify.swebench_grading import grade
from sprout.verify.swerebench_grading import grade as grade_rebench
from sprout.verify.swesmith_grading import grade as grade_swesmith
from sprout.verify.types import Diagnostics
from sprout.verify.uv import install_uv, requested_version, uses_uv, uv_binaries

LOGS = "/logs/verifier"


@dataclass(frozen=True)
class Verdict:
    """The verifier's reward and diagnostics, and the attempt's patch."""

    diagnostics: Diagnostics
    patch: str

    @property
    def reward(self) -> float:
        return self.diagnostics.reward


def run_verifier(task: Task, layers: LayerStore, checkpoint: str, base_checkpoint: str) -> Verdict:
    """Copy the hidden tests into a fork of `checkpoint`, run the verifier, read its results.

    The fork is thrown away: the tests never reach a layer the agent can see, and neither
    does what the verifier is given besides them: this machine's package-index settings
    (its certificate authorities are in the task's base layer already) and, for a verifier
    that runs uv, uv itself (see `sprout.verify.uv`). A uv that cannot
    be fetched raises `VerifierSetupError` (a ResultsError): the machine's fault, not the
    attempt's. It runs as task.toml's `[verifier] user` where one is set (`root`, to read
    what the agent could not), resolved through checkpoint 0 `base_checkpoint`; else as
    `checkpoint`'s user. No process of the agent's outlives its call, so none is left to act
    as that user. Its network is the task's `verifier_network` (public unless task.toml narrows it).
    """
    script = verifier_script(task)
    binaries = uv_binaries(requested_version(script)) if uses_uv(script) else None
    settings = index_settings()
    # The task's own variables win over the machine's: a task may pin its own index. Its
    # `[verifier] env` is the verifier's alone, over the attempt's.
    env = {
        **settings.env(),
        **_attempt_env(task, layers, checkpoint, base_checkpoint),
        **task.verifier_env,
    }
    user = verifier_run_as(task, layers, base_checkpoint)
    with Sandbox.fork(
        layers, checkpoint, env=env, network=task.verifier_network, user=user
    ) as sandbox:
        _put_hidden_tests(sandbox, task)
        put_back(task, layers, base_checkpoint, sandbox)  # what checkpoint 0 withheld
        restore_history(sandbox, task, layers, base_checkpoint)  # and the git history it cut
        if binaries is not None:
            install_uv(sandbox, binaries)
        sandbox.run(f"mkdir -p {LOGS}")
        observation = sandbox.run(task.verifier_command, timeout=task.verifier_timeout_s)
        files: dict[str, bytes] = {}
        for change in sandbox.changes(since=checkpoint):
            if change.path.startswith(LOGS + "/") and change.kind != "deleted":
                content = sandbox.read(change.path)
                if content is not None:
                    files[change.path] = content
    exit_code = None if observation.timed_out else observation.exit_code
    diagnostics = _grade(task, files, observation.output, exit_code)
    return Verdict(diagnostics, workdir_patch(layers, base_checkpoint, checkpoint, task.workdir))


def _grade(task: Task, files: dict[str, bytes], output: str, exit_code: int | None) -> Diagnostics:
    """The verdict on the verifier's files and output, by the rules of the task's format:
    a dataset's own harness where the task names one, else sprout's results formats."""
    if task.results == "swebench" and task.swebench is not None:
        log = files.get(task.swebench.log, b"").decode("utf-8", errors="replace") or output
        if task.swebench.harness != "swebench":
            return grade_fork(log, task.swebench, exit_code, task.id)
        return grade(log, task.swebench, exit_code)
    if task.results == "r2egym" and task.r2egym is not None:
        log = files.get(task.r2egym.log, b"").decode("utf-8", errors="replace")
        return grade_r2egym(log or output, task.r2egym, exit_code, task.id)
    if task.results == "swe-smith" and task.swesmith is not None:
        log = files.get(task.swesmith.log, b"").decode("utf-8", errors="replace")
        return grade_swesmith(log or output, task.swesmith, exit_code, task.id)
    if task.results == "swe-rebench" and task.rebench is not None:
        return grade_rebench(files, task.rebench, exit_code, task.id)
    return read_results(
        files, output, exit_code, format=task.results, required=task.required_tests, task=task.id
    )


def verifier_script(task: Task) -> str:
    """The verifier as text: its command, the tests folder's test.sh and the scripts under
    /tests its command names (to see what tools it needs, before it runs)."""
    parts = [task.verifier_command]
    names = {"test.sh"}
    for word in task.verifier_command.split():
        if word.startswith("/tests/") and ".." not in word.split("/"):
            names.add(word.removeprefix("/tests/"))
    for name in sorted(names):
        if name in task.test_files:
            parts.append(task.test_files[name])
        elif task.tests_dir is not None and Path(task.tests_dir, name).is_file():
            parts.append(Path(task.tests_dir, name).read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def _attempt_env(
    task: Task, layers: LayerStore, checkpoint: str, base_checkpoint: str
) -> dict[str, str]:
    """The attempt's variables, less `[solution] env`: Harbor gives those to solve.sh alone,
    so a variable the solution shadowed is back at checkpoint 0's value for the verifier."""
    env = dict(layers.layer(checkpoint).config.env)
    before = layers.layer(base_checkpoint).config.env
    for name in task.solution_env:
        if name in before:
            env[name] = before[name]
        else:
            env.pop(name, None)
    return env


def _put_hidden_tests(sandbox: Sandbox, task: Task) -> None:
    """/tests on the verifier's fork: the task's tests folder, then its generated test files
    (staged on the host so that one copy replaces whatever /tests held)."""
    if not task.test_files:
        if task.tests_dir is not None:
            sandbox.put(os.fspath(task.tests_dir), "/tests")
        return
    # staged in the fork's own scratch folder, not /tmp: a run killed here leaves the hidden
    # tests where the next start's sweep removes them with the fork's unsealed layer
    scratch = sandbox.store.scratch_dir(sandbox.upper)
    os.makedirs(scratch, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tests-", dir=scratch) as staging:
        root = Path(staging, "tests")
        if task.tests_dir is not None:
            shutil.copytree(task.tests_dir, root, symlinks=True)
        for name, text in task.test_files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        sandbox.put(root, "/tests")


def workdir_patch(layers: LayerStore, base_checkpoint: str, checkpoint: str, workdir: str) -> str:
    """A unified diff of the workdir from checkpoint `base_checkpoint` to `checkpoint`, read
    from layers; caches and git's bookkeeping (`sprout.edits.is_noise`) are left out."""
    with Sandbox.fork(layers, checkpoint) as sandbox:
        changes = sandbox.changes(since=base_checkpoint)
    prefix = workdir.rstrip("/") + "/"
    hunks = []
    for change in changes:
        if not change.path.startswith(prefix) or is_noise(change.path):
            continue
        before = layers.read(base_checkpoint, change.path)
        after = layers.read(checkpoint, change.path)
        if before is None and after is None:
            continue
        name = change.path[len(prefix) :]
        hunks.append(file_diff(name, before, after))
    return "".join(hunks)


def file_diff(name: str, before: bytes | None, after: bytes | None) -> str:
    """One file's unified diff (or "Binary file NAME differs"), for patches and viewers."""
    old = (before or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    new = (after or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    if b"\0" in (before or b"") + (after or b""):
        return f"Binary file {name} differs\n"
    lines = difflib.unified_diff(
        old,
        new,
        fromfile="/dev/null" if before is None else f"a/{name}",
        tofile="/dev/null" if after is None else f"b/{name}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
