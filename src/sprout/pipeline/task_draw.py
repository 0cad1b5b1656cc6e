"""Which tasks a step of `sprout train --tasks-per-step N` plays: a seeded draw, epoch by epoch.

Each epoch is a permutation of every task id, and the steps take consecutive slices
of N. An epoch's last slice shorter than N is dropped, as verl's dataloader
(`drop_last=True`) and TRL's `RepeatSampler` (which keeps only whole batches) drop
theirs: no step plays a task twice and no step plays fewer than N tasks; the next
epoch is shuffled afresh, so the tasks left over differ from epoch to epoch.

The draw is a pure function of the seed, the task ids (sorted, so the order the
folders were listed in does not matter) and the step number: a resumed run draws
for each step exactly what the run it continues drew, whatever that run did.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from sprout.errors import SproutError


class TaskDrawError(SproutError, ValueError):
    """A `--tasks-per-step` that cannot be drawn from the tasks given."""


def check_tasks_per_step(per_step: int, tasks: int) -> None:
    """Refuse a draw size that is not a positive integer at most the number of tasks."""
    if per_step < 1 or per_step > tasks:
        raise TaskDrawError(
            f"--tasks-per-step: expected 1 to {tasks} (the number of tasks), got {per_step}"
        )


def epoch_order(task_ids: Sequence[str], seed: int, epoch: int) -> list[str]:
    """Epoch `epoch`'s permutation of `task_ids`. Seeded with a string (hashed with
    SHA-512 by `random`), so it is the same in every process and on every machine."""
    order = sorted(task_ids)
    random.Random(f"sprout-train-draw:{seed}:{epoch}").shuffle(order)
    return order


def step_tasks(task_ids: Sequence[str], per_step: int, seed: int, step: int) -> list[str]:
    """The ids of the tasks that step `step` (1-based) plays, in their drawn order."""
    check_tasks_per_step(per_step, len(task_ids))
    if step < 1:
        raise TaskDrawError(f"step {step}: steps count from 1")
    steps_per_epoch = len(task_ids) // per_step
    epoch, index = divmod(step - 1, steps_per_epoch)
    start = index * per_step
    return epoch_order(task_ids, seed, epoch)[start : start + per_step]
