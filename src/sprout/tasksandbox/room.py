"""How many attempts a machine, or a cluster's nodes, have room for at once: their cores and
memory over what each holds.

`--workers auto`, and a `--ray` run without `--workers`, keep that many attempts alive.
Each task may have its own sandbox memory limit; a run has one figure, so it is counted for
the largest, and never promises room a task would not find. `TaskSandboxService`
(this machine) and the cluster's `RaySandboxes` (its alive nodes, over each task's Ray
reservation) both count with `fits`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from sprout.sandbox import GIB
from sprout.task import Task
from sprout.tasks.setup.checkpoint import agent_limits

CORES_PER_ATTEMPT = 1.0
"""What an attempt on this machine holds of its cores: one command at a time, as a task's
actor on a cluster's node runs one per core it reserves."""


@dataclass(frozen=True)
class Room:
    """`attempts` alive at once, and `basis`: where the figure comes from, in words."""

    attempts: int
    basis: str


def fits(cores: float, memory: float, cpus: float, memory_each: int) -> int:
    """How many holders of `cpus` cores and `memory_each` bytes each (0: no memory) fit at
    once in `cores` cores and `memory` bytes."""
    by_cores = int(cores / cpus + 1e-9)  # 3 cores / 0.1 is 29.999...: thirty fit
    if memory_each <= 0:
        return by_cores
    return min(by_cores, int(memory // memory_each))


def largest_memory_limit(tasks: Sequence[Task]) -> int:
    """The largest sandbox memory limit among `tasks` (0: none of them has one)."""
    return max((agent_limits(task).memory_bytes for task in tasks), default=0)


def this_machine(tasks: Sequence[Task]) -> Room:
    """This machine's room for `tasks`' attempts: the cores this process may run on and the
    physical memory, over one core and the largest sandbox memory limit each; at least one."""
    cores = len(os.sched_getaffinity(0))
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    each = largest_memory_limit(tasks)
    attempts = max(1, fits(cores, memory, CORES_PER_ATTEMPT, each))
    per_attempt = f"1 core and {gib(each)}" if each else "1 core"
    return Room(
        attempts,
        f"this machine's room: {cores} cores and {gib(memory)} over {per_attempt} an attempt",
    )


def gib(size: float) -> str:
    return f"{size / GIB:.2f} GiB"
