"""`TaskSandboxService`: what a layer store does for a run's tasks, on any machine; on this
machine, the run's `TaskSandboxes` (`sprout run`'s default)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

from sprout.sandbox import LayerStore, Rebuilt, ReplayTurn, SandboxWorkspace, rebuild, sealed_in
from sprout.task import Task
from sprout.tasks.setup.checkpoint import base_checkpoint_of, solution_checkpoint
from sprout.tasksandbox.protocol import TaskSandboxes
from sprout.tasksandbox.room import Room, this_machine
from sprout.verify import Verdict, run_verifier


class TaskSandboxService(TaskSandboxes):
    """Checkpoint 0, the verifier, rebuilds and forks of tasks in the layer store `store`:
    the run folder's store on this machine, or a cluster node's (`sprout.cluster.host`).

    `have` tells a rebuild which checkpoints it may start from (default: those sealed in
    `store`; a node's host also adopts or ships them from stores the task used before).
    `slots` is held by each command the service runs (a task's set-up, the verifier, a
    rebuild) and `linking` while checkpoint 0 is set up: a node's host runs no more
    commands than Ray reserved for it, and links layers into its store one at a time. On
    this machine neither holds anything."""

    def __init__(
        self,
        store: LayerStore,
        *,
        have: Callable[[str], bool] | None = None,
        slots: AbstractContextManager[object] | None = None,
        linking: AbstractContextManager[object] | None = None,
    ) -> None:
        self.store = store
        self._have = sealed_in(store) if have is None else have
        self._slots = nullcontext() if slots is None else slots
        self._linking = nullcontext() if linking is None else linking
        self._rebuilding = threading.Lock()
        """Held while lost checkpoints are rebuilt: two attempts on one lost path must not
        make the same layer twice."""

    def base_checkpoint(self, task: Task, *, replays: bool) -> str:
        """Checkpoint 0 of `task`, built in (or lent to) the store; with the solution at
        /solution when the model `replays` it."""
        with self._slots, self._linking:
            untouched = base_checkpoint_of(task, self.store)
            return solution_checkpoint(task, self.store, untouched) if replays else untouched

    def workspace(self, task: Task) -> SandboxWorkspace:
        """Where the actor's forks of the store's checkpoints run (every task's: one store)."""
        return SandboxWorkspace(self.store)

    def settle(self, checkpoint: str) -> None:
        """Once `checkpoint` is on the store's disk (`LayerStore.wait_durable`)."""
        self.store.wait_durable(checkpoint)

    def verify(self, task: Task, checkpoint: str, base_checkpoint: str) -> Verdict:
        """The verifier on a throw-away fork of `checkpoint` (see `sprout.verify.run_verifier`)."""
        with self._slots:
            return run_verifier(task, self.store, checkpoint, base_checkpoint)

    def rebuild(
        self,
        task: Task,
        base_checkpoint: str,
        old_base_checkpoint: str,
        turns: Sequence[ReplayTurn],
        timeout: float,
    ) -> Rebuilt:
        """Lost checkpoints of `turns` made again in the store, from the deepest one `have`
        finds (see `sprout.sandbox.replay.rebuild`); one rebuild at a time, and a rebuild
        waiting for its turn holds no slot the task's other commands could use. Nothing
        frees a running run's layers on one machine, so there only a store changed by hand
        ever asks for this."""
        with self._rebuilding, self._slots:
            return rebuild(
                self.store, base_checkpoint, old_base_checkpoint, turns, timeout, self._have
            )

    def room(self, tasks: Sequence[Task]) -> Room:
        """This machine's cores and memory over what each attempt holds."""
        return this_machine(tasks)

    def moves(self, task: Task) -> int:
        """Never: the store stays where it is."""
        return 0

    def release(self, task: Task) -> None:
        """Nothing to let go: the store outlives the task's pairs."""
