"""Where a run's sandbox work happens: checkpoint 0, the actor's forks, the verifier.

`sprout run` plays schedules, keeps the tree and writes `sprout.db` in one process;
the sandbox work of each task can happen elsewhere. `LocalSandboxes` does it in the
run folder's own layer store, on this machine; `sprout.cluster.RaySandboxes` does it
on a node of a Ray cluster; both hand the work to `sprout.tasksandbox`. Search only
knows this protocol, so it never imports the cluster's code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sprout.sandbox import LayerStore, Rebuilt, ReplayTurn
from sprout.task import Task
from sprout.tasksandbox import TaskSandboxService
from sprout.tasksandbox.room import Room, this_machine
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


class LocalSandboxes:
    """The run folder's layer store on this machine: today's threads, and `sprout run`'s
    default. The work itself is `TaskSandboxService`'s, which a cluster node's actor shares."""

    def __init__(self, layers: LayerStore) -> None:
        self.layers = layers
        self._service = TaskSandboxService(layers)

    def base_checkpoint(self, task: Task, *, replays: bool) -> str:
        """Checkpoint 0, built in (or lent to) the run's store."""
        return self._service.base_checkpoint(task, replays=replays)

    def workspace(self, task: Task) -> Workspace:
        return self._service.workspace()

    def settle(self, checkpoint: str) -> None:
        self.layers.wait_durable(checkpoint)

    def verify(self, task: Task, checkpoint: str, base_checkpoint: str) -> Verdict:
        return self._service.verify(task, checkpoint, base_checkpoint)

    def rebuild(
        self,
        task: Task,
        base_checkpoint: str,
        old_base_checkpoint: str,
        turns: Sequence[ReplayTurn],
        timeout: float,
    ) -> Rebuilt:
        """Checkpoints made again in the run's store, one rebuild at a time. Nothing frees a
        running run's layers on one machine, so only a store changed by hand ever asks for
        this."""
        return self._service.rebuild(base_checkpoint, old_base_checkpoint, turns, timeout)

    def room(self, tasks: Sequence[Task]) -> Room:
        """This machine's cores and memory over what each attempt holds."""
        return this_machine(tasks)

    def moves(self, task: Task) -> int:
        """Never: this machine is the run's."""
        return 0

    def release(self, task: Task) -> None:
        """Nothing to let go: the store is the run folder's."""
