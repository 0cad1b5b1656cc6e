"""The room a machine has for a run's attempts: its cores and memory over what each holds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sprout.sandbox import GIB
from sprout.task import Task
from sprout.tasksandbox.room import fits, this_machine


@pytest.mark.parametrize(
    ("cores", "memory", "cpus", "each", "held"),
    [
        (4, 16 * GIB, 1, 4 * GIB, 4),  # cores and memory for four
        (8, 16 * GIB, 1, 4 * GIB, 4),  # memory for four
        (2, 16 * GIB, 1, 4 * GIB, 2),  # cores for two
        (3, 16 * GIB, 0.1, 0, 30),  # a tenth of a core each, no memory reserved
        (0, 16 * GIB, 1, 4 * GIB, 0),  # a node with no cores holds nothing
        (4, 3 * GIB, 1, 4 * GIB, 0),
    ],
)
def test_fits_counts_what_both_the_cores_and_the_memory_hold(
    cores: float, memory: float, cpus: float, each: int, held: int
) -> None:
    assert fits(cores, memory, cpus, each) == held


def task(name: str, memory_bytes: int | None = None) -> Task:
    return Task(id=name, path=Path("/nowhere"), instruction="", memory_bytes=memory_bytes)


def test_this_machine_counts_its_cores_and_memory_over_the_largest_sandbox() -> None:
    cores = len(os.sched_getaffinity(0))
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    small, large = task("small", GIB // 2), task("large", memory // 2)
    room = this_machine([small, large])
    assert room.attempts == max(1, min(cores, 2)), "memory for two of the largest"
    assert room.basis == (
        f"this machine's room: {cores} cores and {memory / GIB:.2f} GiB over 1 core and "
        f"{memory // 2 / GIB:.2f} GiB an attempt"
    )
    assert this_machine([task("huge", 2 * memory)]).attempts == 1, "at least one"
    assert this_machine([small]).attempts == min(cores, int(memory // (GIB // 2)))
