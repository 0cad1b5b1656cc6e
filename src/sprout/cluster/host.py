"""One task's sandboxes on one node: the body of the Ray actor that holds them.

The actor owns a layer store on its node's disk (one per node, so a fork stays a
mount) and the task's live forks; the driver reaches them by id. A checkpoint that
is not in the store yet was sealed on another node the task lived on before: it is
adopted (linked, never copied) from that node's store when this node can read it (a
shared filesystem, or nodes on one machine), else shipped from that node while it lives
(`sprout.cluster.ship`), so the attempt continues from its last turn. The task's folder is
the one at its path when this node has it, else the copy the driver shipped
(`sprout.cluster.task_ship`).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from sprout.cluster.ship import fetch
from sprout.cluster.task_ship import ShippedFolder, cache_root, folder_here, relocated
from sprout.durable import hold_lock
from sprout.sandbox import (
    LayerStore,
    Observation,
    Rebuilt,
    ReplayTurn,
    SandboxError,
    SandboxFork,
    SandboxWorkspace,
)
from sprout.task import Task
from sprout.tasksandbox import TaskSandboxService
from sprout.verify import Verdict
from sprout.workspace import CheckpointLost, Sealed, WorkspaceError


class TaskHost:
    """A layer store at `store`, the forks of one task in it, and at most `slots` commands
    (set-up, calls, verifier) running at once: what Ray reserved for it, no more. What a
    store does for a task on any machine is `TaskSandboxService`'s; this adds the node's."""

    def __init__(
        self,
        node: str,
        store: str,
        sources: Sequence[tuple[str, str]],
        slots: int,
        *,
        links: bool = True,
        folder: ShippedFolder | None = None,
    ) -> None:
        self.node = node
        self.store = LayerStore(store)  # placed as a run's store is, where it is new
        self.store.claim()
        self.store.sweep()  # what a killed worker of an earlier run left here
        self.shipped_root = cache_root()
        # every task's shipped folder on this machine (tests, solution) out of every sandbox
        self.store.host.hide([self.shipped_root])
        self.folder = folder
        """The task's folder as the driver shipped it; None: the task runs from its path."""
        self._folder_here: Path | None = None
        self._finding = threading.Lock()
        """Held while the task's folder is looked for (and unpacked) on this node."""
        self.sources = tuple(
            (held_on, path) for held_on, path in sources if os.path.abspath(path) != self.store.path
        )
        """(node, store) of every store the task used before, oldest first."""
        self.links = links
        """Whether other nodes' stores may be read (and their layers linked) from here: False
        acts as if each node were its own machine, so layers are shipped instead."""
        self._slots = threading.BoundedSemaphore(slots)
        self._forks: dict[str, tuple[ExitStack, SandboxFork]] = {}
        self._lock = threading.Lock()
        self._linking = threading.Lock()
        """Held while layers are linked into the store (a base layer lent from the machine's cache,
        a dead node's layers adopted): linking checks for each link, then makes it."""
        self._service = TaskSandboxService(
            self.store, have=self._can_have, slots=self._slots, linking=self._linking
        )

    def where(self) -> tuple[str, str]:
        """(this node's id, this store's path): where the task now lives."""
        return self.node, self.store.path

    def base_checkpoint(self, task: Task, replays: bool) -> str:
        """Checkpoint 0 of `task` in this node's store (`TaskSandboxService.base_checkpoint`)."""
        return self._service.base_checkpoint(self._here(task), replays=replays)

    def fork(self, checkpoint: str) -> str:
        """A new fork of `checkpoint`; returns its id for the calls below."""
        self._have(checkpoint)
        stack = ExitStack()
        fork = stack.enter_context(SandboxWorkspace(self.store).fork(checkpoint))
        fork_id = uuid.uuid4().hex
        with self._lock:
            self._forks[fork_id] = (stack, fork)
        return fork_id

    def check_command(self, fork_id: str, command: str) -> str | None:
        return self._fork(fork_id).check_command(command)

    def run(self, fork_id: str, command: str, timeout: float) -> Observation:
        fork = self._fork(fork_id)
        with self._slots:
            return fork.run(command, timeout)

    def seal(self, fork_id: str) -> Sealed:
        return self._fork(fork_id).seal()

    def wait_durable(self, checkpoint: str) -> None:
        """Once `checkpoint` is on this node's disk (`LayerStore.wait_durable`): what the
        driver waits for before it records a checkpoint sealed here."""
        self.store.wait_durable(checkpoint)

    def close(self, fork_id: str) -> None:
        """Drop the fork and what it wrote since its last seal."""
        with self._lock:
            stack, _ = self._forks.pop(fork_id, (ExitStack(), None))
        stack.close()

    def verify(self, task: Task, checkpoint: str, base_checkpoint: str) -> Verdict:
        """The verifier on a throw-away fork of `checkpoint` here."""
        task = self._here(task)
        self._have(base_checkpoint)
        self._have(checkpoint)
        return self._service.verify(task, checkpoint, base_checkpoint)

    def rebuild(
        self,
        task: Task,
        base_checkpoint: str,
        old_base_checkpoint: str,
        turns: Sequence[ReplayTurn],
        timeout: float,
    ) -> Rebuilt:
        """Lost checkpoints made again here, from the deepest one this node can still adopt
        or ship (see `TaskSandboxService.rebuild`)."""
        return self._service.rebuild(task, base_checkpoint, old_base_checkpoint, turns, timeout)

    def _can_have(self, checkpoint: str) -> bool:
        try:
            self._have(checkpoint)
        except CheckpointLost:
            return False
        return True

    def shutdown(self) -> None:
        """Close every fork and let go of the store (the task's pairs are over)."""
        with self._lock:
            forks, self._forks = list(self._forks.values()), {}
        for stack, _ in forks:
            stack.close()
        self.store.release()

    def _here(self, task: Task) -> Task:
        """`task` with its folder where this node has it: found (or unpacked) once."""
        if self.folder is None:
            return task
        with self._finding:
            if self._folder_here is None:
                self._folder_here = folder_here(task, self.folder, self.shipped_root)
            return relocated(task, self._folder_here)

    def _fork(self, fork_id: str) -> SandboxFork:
        with self._lock:
            found = self._forks.get(fork_id)
        if found is None:
            raise WorkspaceError(f"fork {fork_id}: not open on node {self.node}")
        return found[1]

    def _have(self, checkpoint: str) -> None:
        """`checkpoint` in this store: sealed here, or adopted or shipped from a store the
        task used before; CheckpointLost when none of them can be read or reached."""
        try:
            self.store.layer(checkpoint)
            return
        except SandboxError:
            pass
        # one adoption at a time per store: this actor's threads, and this node's other actors
        with self._linking:
            held = hold_lock(self.store.path + ".adopting")
            try:
                if any(self._adopt(path, checkpoint) for _, path in self.sources):
                    return
                if any(fetch(node, path, self.store, checkpoint) for node, path in self.sources):
                    return
            finally:
                held.release()
        tried = ", ".join(f"{path} on node {node[:12]}" for node, path in self.sources)
        raise CheckpointLost(
            f"checkpoint {checkpoint}: in none of the stores node {self.node[:12]} can read or "
            f"ship from ({tried or 'none before this one'}); it was lost with its node"
        )

    def _adopt(self, source: str, checkpoint: str) -> bool:
        """Whether `checkpoint` could be adopted from the store at `source`."""
        if not self.links or not os.path.isfile(os.path.join(source, "store.json")):
            return False  # not readable from this node (or never a store)
        try:
            self.store.adopt(LayerStore(source), checkpoint)
        except SandboxError:
            return False
        return True
