"""GRPO groups of a run: what a batch is made from.

A group is one task's rollouts under one method (for `train-rollouts`: its
roots and their children). It is finished when none of its attempts is still
running and every one that was not stopped has the verifier's reward; attempts
stopped before they ended (another attempt had passed) have no reward and are
left out. Unfinished groups are skipped and named in the report, so a batch is
never built from half a group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sprout.train.credit import Leaf, zero_variance
from sprout.tree import Attempt, RolloutTree


@dataclass(frozen=True)
class Group:
    """One task's verified rollouts under one method, oldest first."""

    task_id: str
    method: str
    attempts: tuple[Attempt, ...]

    @property
    def group_id(self) -> str:
        return f"{self.task_id}/{self.method}"

    @property
    def zero_variance(self) -> bool:
        """Every reward equal: no rollout is better than another, so no gradient."""
        return zero_variance([float(a.reward or 0.0) for a in self.attempts])

    def leaves(self) -> list[Leaf]:
        """The rollouts as credit sees them; a parent outside the group makes a root."""
        ids = {a.id for a in self.attempts}
        return [
            Leaf(
                a.id,
                a.parent_id if a.parent_id in ids else None,
                a.boundary if a.parent_id in ids else 0,
                float(a.reward or 0.0),
            )
            for a in self.attempts
        ]


def finished_groups(
    tree: RolloutTree, methods: Sequence[str] | None = None
) -> tuple[list[Group], list[str]]:
    """The run's finished groups (tasks in the order they were added, then methods), and a
    line naming each unfinished one."""
    groups: list[Group] = []
    unfinished: list[str] = []
    for task_id in tree.task_ids():
        by_method: dict[str, list[Attempt]] = {}
        for attempt in tree.attempts(task_id):
            if methods is None or attempt.method in methods:
                by_method.setdefault(attempt.method, []).append(attempt)
        for method, attempts in by_method.items():
            faulted = [a.id for a in attempts if a.status == "error"]
            waiting = [
                a.id
                for a in attempts
                if a.status == "running"
                or (a.status not in ("stopped", "error") and a.reward is None)
            ]
            if faulted or waiting:
                said = [f"attempts {', '.join(map(str, waiting))} not finished and verified"]
                said = said if waiting else []
                if faulted:  # no reward: an error is not a zero, and a group lacks it
                    said.append(f"attempts {', '.join(map(str, faulted))} ended in error")
                unfinished.append(f"{task_id}/{method}: {'; '.join(said)}")
                continue
            verified = tuple(a for a in attempts if a.reward is not None)
            if verified:
                groups.append(Group(task_id, method, verified))
    return groups, unfinished
