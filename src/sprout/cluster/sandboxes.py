"""`sprout run --ray`: each task's sandbox work in one Ray actor, on one node.

The unit of placement is a task's tree: its base layer, its attempts' forks and
seals and its verifier runs all happen in one `TaskHost` actor, so every checkpoint
of the task is in that node's store and a fork stays a mount. Ray places the actor
(it reserves cores and memory for it, so a node holds no more tasks than it has cores
and memory for: Ray's scheduling and backpressure, not ours; `sprout.cluster.reservation`),
spreading the tasks over the nodes rather than filling one first.
When the node dies, the task gets a new actor wherever Ray puts it, which adopts the
dead node's layers when it can read them; the driver counts the move (`moves`) and
plays the pairs it broke again. Each task's folder is packed once, on its first
placement, and travels to its actors through Ray's object store, so nodes need no copy
of the task folders (`sprout.cluster.task_ship`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import ray
from ray.exceptions import RayActorError

from sprout.cluster.host import TaskHost
from sprout.cluster.place import Place
from sprout.cluster.remote_workspace import RemoteWorkspace
from sprout.cluster.reservation import Reservation, check_fits, cluster_room, reservation
from sprout.cluster.task_ship import ShippedFolder, ship
from sprout.sandbox import Rebuilt, ReplayTurn, refuse_addresses, refused_by_run
from sprout.task import Task
from sprout.tasksandbox import TaskSandboxes
from sprout.tasksandbox.room import Room
from sprout.verify import Verdict
from sprout.workspace import Workspace, WorkspaceError

PLACE_TRIES = 5
"""Starts of a task's actor before its pairs end in error: nodes that die one after the
other, or a start Ray sent to a node whose death it had not yet seen."""
MAX_CALLS = 64
"""Calls one actor serves at once (its forks' calls wait in threads; `slots` bound the
commands that actually run)."""


class _RayTaskHost(TaskHost):
    """`TaskHost` on the node Ray placed it on; `store` names that node as `{node}`.
    `refused`: addresses none of its sandboxes reaches (the driver's REFUSE_ENV, which a
    worker does not inherit, and the cluster's nodes)."""

    def __init__(
        self,
        store: str,
        sources: tuple[tuple[str, str], ...],
        slots: int,
        links: bool,
        folder: ShippedFolder | None = None,
        refused: tuple[str, ...] = (),
    ) -> None:
        refuse_addresses(list(refused))  # the actor's process is its own: no other actor sees it
        node = ray.get_runtime_context().get_node_id()
        super().__init__(
            node, store.format(node=node[:12]), sources, slots, links=links, folder=folder
        )


_HostActor = ray.remote(_RayTaskHost)

Placement = dict[str, Any]
"""One entry of the placement log: task, node, store, since (epoch s), why, and what its
actor reserved there: cpus and memory (bytes)."""


class RaySandboxes(TaskSandboxes):
    """`TaskSandboxes` on the Ray cluster `ray.init` joined.

    `store` is each node's store path with `{node}` for the node's id; `cpus` is
    what Ray reserves per task (and how many of its commands run at once), `memory` the
    bytes it reserves per task (None: the task's sandbox memory limit per command);
    `record` is told the placement log each time it grows (the run's meta keeps it);
    `earlier` is the log a resumed run left, whose stores hold its tasks' checkpoints;
    `links` False ships layers between nodes even where they could be linked (each node
    then acts as a machine of its own).
    """

    def __init__(
        self,
        store: str,
        cpus: float,
        record: Callable[[list[Placement]], None],
        earlier: Sequence[Placement] = (),
        *,
        memory: int | None = None,
        links: bool = True,
    ) -> None:
        self._store_template = store
        self._links = links
        self._cpus = cpus
        self._memory = memory
        self._record = record
        self._places: dict[str, Place] = {}
        self._stores: dict[str, list[tuple[str, str]]] = {}
        """(node, store) of every store each task has used, oldest first: where a moved task
        finds its layers."""
        for placed in earlier:
            self._stores.setdefault(placed["task"], []).append((placed["node"], placed["store"]))
        self._moves: dict[str, int] = {}
        self._folders: dict[str, ShippedFolder | None] = {}
        """Each placed task's folder, packed and in the object store (for its next actor)."""
        self._log: list[Placement] = list(earlier)
        self._sealed: dict[str, Place] = {}
        """Where each checkpoint the actor's forks sealed lives, until `settle` has it on disk."""
        self._lock = threading.Lock()
        self._task_locks: dict[str, threading.Lock] = {}

    def base_checkpoint(self, task: Task, *, replays: bool) -> str:
        found: str = self._place(task).call("base_checkpoint", task, replays)
        return found

    def workspace(self, task: Task) -> Workspace:
        return RemoteWorkspace(lambda: self._place(task), self._note_sealed)

    def settle(self, checkpoint: str) -> None:
        """Once `checkpoint` is on the disk of the node whose fork sealed it (a layer lives
        there); a WorkspaceError when that node died first, which may have taken it along.
        Checkpoint 0 and rebuilt checkpoints are on disk when they come back."""
        with self._lock:
            place = self._sealed.get(checkpoint)
        if place is not None:
            place.call("wait_durable", checkpoint)
            with self._lock:
                self._sealed.pop(checkpoint, None)

    def _note_sealed(self, checkpoint: str, place: Place) -> None:
        with self._lock:
            self._sealed[checkpoint] = place

    def verify(self, task: Task, checkpoint: str, base_checkpoint: str) -> Verdict:
        found: Verdict = self._place(task).call("verify", task, checkpoint, base_checkpoint)
        return found

    def rebuild(
        self,
        task: Task,
        base_checkpoint: str,
        old_base_checkpoint: str,
        turns: Sequence[ReplayTurn],
        timeout: float,
    ) -> Rebuilt:
        found: Rebuilt = self._place(task).call(
            "rebuild", task, base_checkpoint, old_base_checkpoint, turns, timeout
        )
        return found

    def room(self, tasks: Sequence[Task]) -> Room:
        """The attempts the cluster's alive nodes run at once, each of `tasks` (at least one)
        reserving what the largest of their reservations does (`reservation.cluster_room`)."""
        reserved = [reservation(task, self._cpus, self._memory) for task in tasks]
        return cluster_room(max(reserved, key=lambda each: each.memory), _alive_nodes())

    def moves(self, task: Task) -> int:
        """How many of the nodes that held `task` died."""
        with self._lock:
            return self._moves.get(task.id, 0)

    def release(self, task: Task) -> None:
        """End `task`'s actor: Ray gives its cores to the next task waiting for them."""
        self._end(task.id)

    def close(self) -> None:
        """End every task's actor (at the end of the run, or when it stops early)."""
        with self._lock:
            held = list(self._places)
        for task_id in held:
            self._end(task_id)

    def _end(self, task_id: str) -> None:
        with self._lock:
            place = self._places.pop(task_id, None)
            self._folders.pop(task_id, None)  # no actor will need it: the object store frees it
        if place is None:
            return
        if not place.lost:
            with contextlib.suppress(WorkspaceError):
                place.call("shutdown")
        ray.kill(place.actor)

    def _place(self, task: Task) -> Place:
        """Where `task` lives: its actor, started on first use and again after its node died
        (Ray picks the node; this call waits until one has the cores and memory it reserves)."""
        with self._lock:
            task_lock = self._task_locks.setdefault(task.id, threading.Lock())
        with task_lock:
            with self._lock:
                place = self._places.get(task.id)
                sources = tuple(self._stores.get(task.id, ()))
            if place is not None and not place.lost:
                return place
            why = "placed" if place is None else f"node {place.node} died"
            reserved = reservation(task, self._cpus, self._memory)
            actor, node, store = self._start(task, reserved, sources, self._folder(task))
            place = Place(actor, node, store, lambda lost: self._lost(task.id, lost))
            with self._lock:
                self._places[task.id] = place
                self._stores.setdefault(task.id, []).append((node, store))
                self._log.append(
                    {
                        "task": task.id,
                        "node": node,
                        "store": store,
                        "since": time.time(),
                        "why": why,
                        "cpus": reserved.cpus,
                        "memory": reserved.memory,
                    }
                )
                log = list(self._log)
            self._record(log)
            return place

    def _folder(self, task: Task) -> ShippedFolder | None:
        """`task`'s folder, packed into the object store on the task's first placement (its
        actors after a move get the same one); called under the task's own lock."""
        with self._lock:
            if task.id in self._folders:
                return self._folders[task.id]
        folder = ship(task)  # outside the lock: the other tasks' places need not wait
        with self._lock:
            self._folders[task.id] = folder
        return folder

    def _start(
        self,
        task: Task,
        reserved: Reservation,
        sources: tuple[tuple[str, str], ...],
        folder: ShippedFolder | None,
    ) -> tuple[Any, str, str]:
        """A new actor for `task` (its handle, node and store) holding `reserved`, handed
        the task's `folder`: Ray may place one on a node that is dying and not yet known
        dead, so a start that the node's death cancelled is tried again; one whose own
        set-up failed (an unwritable store) is not, nor one that no alive node could ever
        hold (Ray would keep it pending forever)."""
        for _ in range(PLACE_TRIES):
            check_fits(task.id, reserved, _alive_nodes())
            options = {
                "num_cpus": reserved.cpus,
                "memory": reserved.memory,
                "scheduling_strategy": "SPREAD",  # over the nodes, as far as their room allows
            }
            actor: Any = _HostActor.options(**options, max_concurrency=MAX_CALLS).remote(
                self._store_template,
                sources,
                reserved.slots,
                self._links,
                folder,
                refused_addresses(),
            )
            try:
                node, store = ray.get(actor.where.remote())
                return actor, node, store
            except RayActorError as error:
                reason = str(error).strip().splitlines()[-1]
                if error.actor_init_failed:
                    break
        raise WorkspaceError(f"{task.id}: no node could hold its sandboxes: {reason}")

    def _lost(self, task_id: str, place: Place) -> None:
        with self._lock:
            if self._places.get(task_id) is place:
                self._moves[task_id] = self._moves.get(task_id, 0) + 1


def refused_addresses() -> tuple[str, ...]:
    """What this process's sandboxes may not reach, and every node of the cluster now (its
    GCS, dashboard and raylets run whatever a caller submits): a node's own sandboxes
    refuse its addresses anyway, not those of the others."""
    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    addresses = [str(node["NodeManagerAddress"]) for node in nodes if node["Alive"]]
    return tuple(dict.fromkeys([*refused_by_run(), *addresses]))


def _alive_nodes() -> list[dict[str, float]]:
    """The total resources of each node of the cluster that is alive now."""
    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    return [node["Resources"] for node in nodes if node["Alive"]]
