"""`TaskSandboxes`: the sandbox work of a run's tasks, wherever it runs.

`sprout run` plays schedules, keeps the tree and writes `sprout.db` in one process; the
sandbox work of each task (checkpoint 0, the actor's forks, the verifier, rebuilds) can
happen elsewhere. Two classes do it, and both subclass this protocol so that mypy checks
each against it: `TaskSandboxService` in one layer store on this machine (`sprout run`'s
default), and `sprout.cluster.RaySandboxes` on the nodes of a Ray cluster. Search knows
only this protocol, so it never imports the cluster's code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sprout.sandbox import Rebuilt, ReplayTurn
from sprout.task import Task
from sprout.tasksandbox.room import Room
from sprout.verify import Verdict
from sprout.workspace import Workspace


class TaskSandboxes(Protocol):
    """The sandbox work of a run's tasks, wherever it runs.

    Methods raise `WorkspaceError` when the place itself failed (a node that died):
    that is never the task's or the model's fault, and the pair is played again
    (`moves` says when) or left for `--resume`."""

    def base_checkpoint(self, task: Task, *, replays: bool) -> str:
        """Checkpoint 0 of `task` (with the solution at /solution when the model `replays`
        it); raises TaskError or SandboxError when the task's set-up fails."""
        ...

    def workspace(self, task: Task) -> Workspace:
        """Where the actor's forks of `task`'s checkpoints run."""
        ...

    def settle(self, checkpoint: str) -> None:
        """Once `checkpoint` is on the disk of the store that sealed it: the run's tree
        records no checkpoint before (`sprout.workspace.Settle`)."""
        ...

    def verify(self, task: Task, checkpoint: str, base_checkpoint: str) -> Verdict:
        """The verifier's verdict on `checkpoint` (see `sprout.verify.run_verifier`)."""
        ...

    def rebuild(
        self,
        task: Task,
        base_checkpoint: str,
        old_base_checkpoint: str,
        turns: Sequence[ReplayTurn],
        timeout: float,
    ) -> Rebuilt:
        """Make the lost checkpoints of `turns` (a path from checkpoint `old_base_checkpoint`) the
        task's again by running their recorded calls once more on `base_checkpoint`, checkpoint 0
        where the task's sandboxes are now (see `sprout.sandbox.replay.rebuild`)."""
        ...

    def room(self, tasks: Sequence[Task]) -> Room:
        """How many of `tasks`' (at least one) attempts the place runs at once: what a run
        without a number of workers keeps alive."""
        ...

    def moves(self, task: Task) -> int:
        """How many times `task`'s sandboxes lost their place and moved: a pair that ended
        in error while this grew is played again, since the fault was the place's."""
        ...

    def release(self, task: Task) -> None:
        """Every pair of `task` is over: what holds its sandboxes may go."""
        ...
