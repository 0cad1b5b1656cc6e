"""GRPO groups of a run, and the report of a batch made from them.

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
from typing import TYPE_CHECKING, Any

from sprout.train.credit import Leaf, zero_variance
from sprout.tree import Attempt, RolloutTree

if TYPE_CHECKING:
    from sprout.train.samples import Sample


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


@dataclass(frozen=True)
class GroupReport:
    """What a batch holds: the figures a GRPO user checks before trusting a step."""

    groups: int
    zero_variance_groups: int
    samples: int
    tokens_trained: int
    """Tokens with loss mask 1: each produced token once."""
    tokens_in_batch: int
    """Every token of every sample: what the model reads, retained prefixes included."""
    unfinished: tuple[str, ...] = ()
    """Groups left out because some attempt was still running or unverified."""
    dropped: tuple[str, ...] = ()
    """Samples left out as longer than `max_length` (with `overlong="drop"`)."""

    @property
    def zero_variance_fraction(self) -> float:
        return self.zero_variance_groups / self.groups if self.groups else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "groups": self.groups,
            "zero_variance_groups": self.zero_variance_groups,
            "zero_variance_fraction": self.zero_variance_fraction,
            "samples": self.samples,
            "tokens_trained": self.tokens_trained,
            "tokens_in_batch": self.tokens_in_batch,
            "unfinished": list(self.unfinished),
            "dropped": list(self.dropped),
        }

    def describe(self) -> str:
        """One line for a log."""
        line = (
            f"{self.groups} groups ({self.zero_variance_groups} with zero variance, "
            f"{100 * self.zero_variance_fraction:.0f}%), {self.samples} samples, "
            f"{self.tokens_trained:,} of {self.tokens_in_batch:,} tokens trained"
        )
        if self.unfinished:
            line += f"; {len(self.unfinished)} unfinished groups skipped"
        if self.dropped:
            line += f"; {len(self.dropped)} samples dropped as too long"
        return line


def report(
    groups: Sequence[Group],
    samples: Sequence[Sample],
    *,
    unfinished: Sequence[str] = (),
    dropped: Sequence[str] = (),
) -> GroupReport:
    """The report of a batch of `samples` made from `groups`."""
    return GroupReport(
        groups=len(groups),
        zero_variance_groups=sum(group.zero_variance for group in groups),
        samples=len(samples),
        tokens_trained=sum(sum(sample.loss_mask) for sample in samples),
        tokens_in_batch=sum(len(sample.input_ids) for sample in samples),
        unfinished=tuple(unfinished),
        dropped=tuple(dropped),
    )
