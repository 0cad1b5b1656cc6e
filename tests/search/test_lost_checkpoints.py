"""A task whose sandboxes lost their node with its disk: the checkpoints sealed there are
gone, so an attempt in flight cannot simply continue from its last turn.

Its checkpoint is rebuilt from checkpoint 0 by running the recorded calls of its path
again, and it continues. When a call exits otherwise than recorded, a root is restarted
from checkpoint 0 by a new root that names it (`restarts`), with the reason on the lost
one, and a branch ends in error (`lost`), never as a failed test; nothing finished is
re-run, and `--resume` restarts nothing twice. The node's death is played by a
`TaskSandboxes` of the test's own: the run's store, then at the chosen call a second,
empty store (the next node's).
"""

from __future__ import annotations

import dataclasses
import io
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from sprout.models.resolve import ModelSpec
from sprout.runfolder import RunFolder
from sprout.sandbox import LayerStore, Observation
from sprout.sandbox.replay import Rebuilt, ReplayTurn, sealed_in
from sprout.search import Progress, RunSettings, parse_methods, run_tasks
from sprout.task import Task
from sprout.tasks import load_native
from sprout.tasksandbox import TaskSandboxService
from sprout.tasksandbox.room import Room
from sprout.tree import Attempt
from sprout.verify import Verdict
from sprout.workspace import CheckpointLost, Fork, Sealed, Workspace, WorkspaceError
from tests.support.requirements import require_host_image
from tests.support.taskfolders import TRAPPED, two_edits_task


class DiskLosingSandboxes:
    """This machine's sandboxes in the run's store, until shell call number `dies_at` of the
    run: that call fails as a node's death does, and the task moves to a new store (the
    next node's, empty but for the checkpoint 0 it builds), where no checkpoint sealed
    before can be found. `diverges` makes every rebuild meet a call that exits otherwise
    than recorded (as a command that reads the clock would)."""

    def __init__(self, run: RunFolder, dies_at: int, diverges: bool = False) -> None:
        """`dies_at` 0: the node dies at the first verifier run instead."""
        self._local = TaskSandboxService(run.layers)
        self._next = run.path / "next-node"
        self._dies_at = dies_at
        self._diverges = diverges
        self._calls = 0
        self._lock = threading.Lock()
        self.dead = False

    @property
    def store(self) -> LayerStore:
        return self._local.store

    def base_checkpoint(self, task: Task, *, replays: bool) -> str:
        return self._local.base_checkpoint(task, replays=replays)

    def workspace(self, task: Task) -> Workspace:
        return _LosingWorkspace(self, self._local.workspace(task))

    def settle(self, checkpoint: str) -> None:
        self._local.settle(checkpoint)

    def verify(self, task: Task, checkpoint: str, base: str) -> Verdict:
        if self._dies_at == 0:
            self.die()
        self.check(checkpoint)
        self.check(base)
        return self._local.verify(task, checkpoint, base)

    def rebuild(
        self, task: Task, base: str, old_base: str, turns: Sequence[ReplayTurn], timeout: float
    ) -> Rebuilt:
        if self._diverges:
            first = turns[0].calls[0]
            wrong = dataclasses.replace(first, exit_code=(first.exit_code or 0) + 1)
            turns = [dataclasses.replace(turns[0], calls=(wrong, *turns[0].calls[1:]))]
        return self._local.rebuild(task, base, old_base, turns, timeout)

    def room(self, tasks: Sequence[Task]) -> Room:
        return self._local.room(tasks)

    def moves(self, task: Task) -> int:
        return int(self.dead)

    def release(self, task: Task) -> None:
        self._local.release(task)

    def check(self, checkpoint: str) -> None:
        if not sealed_in(self.store)(checkpoint):
            raise CheckpointLost(f"checkpoint {checkpoint}: lost with its node")

    def call(self) -> None:
        """One shell call; the one that meets the node's death fails."""
        with self._lock:
            self._calls += 1
            if self._calls == self._dies_at:
                self.die()

    def die(self) -> None:
        if not self.dead:
            self.dead = True
            self._local = TaskSandboxService(LayerStore(str(self._next)))
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
        return self._fork.seal()


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
    settings = RunSettings(ModelSpec.parse(model), parse_methods(methods, rounds=(1,)), workers=1)
    log = io.StringIO()
    content = run_tasks([task], run, settings, Progress(log), sandboxes=sandboxes)
    return run, content, log.getvalue()


def attempts(run: RunFolder) -> list[Attempt]:
    return run.tree.attempts("two-edits")


def rebuilds(run: RunFolder) -> list[dict]:
    return [entry.to_json() for entry in run.tree.meta().rebuilt]


@pytest.mark.checkpoints_elsewhere("a node's store lost on purpose")
def test_an_attempt_whose_checkpoint_died_with_its_node_continues_on_a_rebuilt_one(
    tmp_path: Path,
) -> None:
    # the second root's second call (each root makes 3): the first root is finished, and
    # the second has one turn sealed on the node that dies
    run, content, log = play(tmp_path, "pass@2", DiskLosingSandboxes, dies_at=5)
    first, second = attempts(run)
    assert first.reward == 1.0 and second.reward == 1.0
    turns = run.tree.own_turns(second)
    assert [t.index for t in turns] == [1, 2, 3], "turn 1 kept, not played again"
    next_node = LayerStore(str(run.path / "next-node"))
    assert all(sealed_in(next_node)(t.checkpoint) for t in turns), "under their ids"
    (rebuilt,) = rebuilds(run)
    assert rebuilt["attempt"] == second.id and rebuilt["checkpoint"] == turns[0].checkpoint
    assert (rebuilt["calls"], rebuilt["differed"], rebuilt["diverged"]) == (1, 0, None)
    assert "rebuilt from checkpoint 0 by running 1 recorded calls again" in log
    assert "faults" not in content["tasks"]["two-edits"]["pass@2"], "no error left"
    assert [s["status"] for s in run.tree.schedules()] == ["done"]
    run.close()


def test_a_checkpoint_lost_before_its_verifier_ran_is_rebuilt_and_verified(
    tmp_path: Path,
) -> None:
    run, _, _ = play(tmp_path, "pass@1", DiskLosingSandboxes, dies_at=0)
    (root,) = attempts(run)
    assert (root.status, root.reward) == ("submitted", 1.0), "verified once rebuilt"
    (rebuilt,) = rebuilds(run)
    # the two edits; the submission wrote nothing, so it sealed no layer to rebuild
    assert (rebuilt["attempt"], rebuilt["calls"], rebuilt["diverged"]) == (root.id, 2, None)
    assert [s["status"] for s in run.tree.schedules()] == ["done"]
    run.close()


@pytest.mark.checkpoints_elsewhere("a node's store lost on purpose")
def test_a_root_whose_lost_checkpoint_cannot_be_rebuilt_restarts_from_checkpoint_0(
    tmp_path: Path,
) -> None:
    run, content, log = play(tmp_path, "pass@2", DiskLosingSandboxes, dies_at=5, diverges=True)
    first, lost, restart = attempts(run)
    assert first.reward == 1.0 and first.restarts is None
    assert (lost.status, lost.fault, lost.reward) == ("error", "lost", None)
    assert "lost with its node; could not be rebuilt: turn 1: " in (lost.end_reason or "")
    assert len(run.tree.own_turns(lost)) == 1, "the lost root's turn stays as recorded"
    assert restart.kind == "root" and restart.restarts == lost.id and restart.reward == 1.0
    assert [t.index for t in run.tree.own_turns(restart)] == [1, 2, 3], "from checkpoint 0"
    assert f"attempt {lost.id} restarted from checkpoint 0 as attempt {restart.id}" in log
    summary = content["methods"]["pass@2"]
    assert summary["pass_at_1"] == 1.0, "the two roots that count: the first and the restart"
    assert content["tasks"]["two-edits"]["pass@2"]["faults"] == {"lost": 1}
    assert [s["status"] for s in run.tree.schedules()] == ["done"]
    run.close()

    # a resume restarts nothing again, and replays nothing finished
    run, _, _ = play(tmp_path, "pass@2", None)
    assert [a.id for a in attempts(run)] == [first.id, lost.id, restart.id]
    run.close()


@pytest.mark.checkpoints_elsewhere("a node's store lost on purpose")
def test_a_branch_continues_from_its_lost_fork_point_rebuilt_from_its_parents_turns(
    tmp_path: Path,
) -> None:
    # the trap oracle fails its root (3 calls), so sprout branches from it; the node dies
    # at the branch's first call, taking the root's checkpoints with it
    run, content, _ = play(tmp_path, "sprout", DiskLosingSandboxes, TRAPPED, dies_at=4)
    root, branch = attempts(run)[:2]
    assert root.kind == "root" and root.reward == 0.0
    assert branch.kind == "branch" and branch.status != "error" and branch.reward is not None
    (rebuilt,) = rebuilds(run)
    assert rebuilt["attempt"] == branch.id and rebuilt["diverged"] is None
    assert rebuilt["calls"] == sum(len(t.calls) for t in run.tree.path(root, branch.boundary))
    assert "faults" not in content["tasks"]["two-edits"]["sprout"], "no error left"
    run.close()


def test_a_branch_whose_fork_point_cannot_be_rebuilt_ends_in_error_not_failure(
    tmp_path: Path,
) -> None:
    run, content, _ = play(
        tmp_path, "sprout", DiskLosingSandboxes, TRAPPED, dies_at=4, diverges=True
    )
    branch = attempts(run)[1]
    assert branch.kind == "branch" and (branch.status, branch.fault) == ("error", "lost")
    assert branch.reward is None, "an error, never a failed test"
    assert "could not be rebuilt" in (branch.end_reason or "")
    (schedule,) = run.tree.schedules()
    assert schedule["status"] == "error" and "lost" in (schedule["error"] or "")
    assert content["tasks"]["two-edits"]["sprout"]["faults"] == {"lost": 1}
    run.close()
