"""What a task's actor reserves on its node: Ray's `CPU` and `memory` resources.

Ray starts an actor only on a node with what it reserves still free, so a node holds no
more tasks than its cores and its memory allow, and the others wait for a task to end
(backpressure, Ray's scheduling and not ours). By default a task reserves the memory its
sandboxes may use at once: the memory limit its sandbox enforces, once for each command
its actor runs at once. A reservation that no node of the cluster has in all is refused
before Ray is asked for it: Ray would keep it pending, and the run would wait forever.
How many reservations the alive nodes hold at once is the cluster's room (`cluster_room`),
which a run without `--workers` fills.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sprout.task import Task
from sprout.tasks.setup.checkpoint import agent_limits
from sprout.tasksandbox.room import Room, fits, gib
from sprout.workspace import WorkspaceError


@dataclass(frozen=True)
class Reservation:
    """`cpus` cores and `memory` bytes of one node, held by one task's actor."""

    cpus: float
    memory: int
    basis: str
    """Where `memory` comes from, for a refusal to say."""

    @property
    def slots(self) -> int:
        """Commands the actor runs at once."""
        return slots_of(self.cpus)


def slots_of(cpus: float) -> int:
    """Commands an actor with `cpus` cores runs at once: one per whole core, at least one."""
    return max(1, int(cpus))


def reservation(task: Task, cpus: float, memory: int | None) -> Reservation:
    """`task`'s reservation: `cpus` cores and `memory` bytes (`--ray-memory`); None: its
    sandbox's memory limit times its slots (a sandbox without a limit reserves none)."""
    if memory is not None:
        return Reservation(cpus, memory, "--ray-memory")
    slots = slots_of(cpus)
    limit = agent_limits(task).memory_bytes  # the limit its sandboxes' cgroups enforce
    basis = f"its sandbox's memory limit, {gib(limit)}, times {slots} commands at once"
    return Reservation(cpus, limit * slots, basis)


def check_fits(task_id: str, wanted: Reservation, nodes: Sequence[Mapping[str, float]]) -> None:
    """A WorkspaceError unless one of `nodes` (the alive nodes' total resources, as
    `ray.nodes()` tells them) could hold `wanted` once its other tasks ended."""
    with_cores = [node for node in nodes if node.get("CPU", 0.0) >= wanted.cpus]
    if not with_cores:
        most = max((node.get("CPU", 0.0) for node in nodes), default=0.0)
        need = f"{wanted.cpus:g} cores (--ray-cpus), and the largest node has {most:g}"
    else:
        most = max(node.get("memory", 0.0) for node in with_cores)
        if wanted.memory <= most:
            return
        need = (
            f"{gib(wanted.memory)} of memory ({wanted.basis}) on a node with {wanted.cpus:g} "
            f"cores, and the largest such node has {gib(most)}: set a smaller --ray-memory "
            "(0 reserves none)"
        )
    raise WorkspaceError(f"{task_id}: no node of the cluster can hold it: it needs {need}")


def cluster_room(wanted: Reservation, nodes: Sequence[Mapping[str, float]]) -> Room:
    """How many attempts `nodes` (the alive nodes' total resources) run at once when each
    task's actor holds `wanted`: the actors each node holds, times the commands each runs at
    once; at least one (a reservation no node holds ends its tasks in error, `check_fits`)."""
    held = [
        fits(node.get("CPU", 0.0), node.get("memory", 0.0), wanted.cpus, wanted.memory)
        for node in nodes
    ]
    tasks = sum(held)
    each = f"{wanted.cpus:g} core" + ("" if wanted.cpus == 1 else "s")
    each += f" and {gib(wanted.memory)}" if wanted.memory else ""
    basis = f"the cluster's room: {tasks} tasks of {each} on {sum(1 for h in held if h)} nodes"
    if wanted.slots > 1:
        basis += f", {wanted.slots} commands at once each"
    return Room(max(1, tasks * wanted.slots), basis)
