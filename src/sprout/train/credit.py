"""Tree credit: the advantage of every token a rollout of a group produced, behind one option.

A group is one task's rollouts under one method: its roots and their branches,
each a leaf with the verifier's binary reward. Every token is trained once, in
the rollout that first produced it (a branch's retained prefix is its parent's,
masked in the branch), so credit is asked per produced turn: `(attempt, turn)`.
All tokens of one turn share an advantage in every mode, since branches start at
turn boundaries.

- `grpo` (default): (r - mean) / (std + epsilon) over the whole group, the
  sample standard deviation as verl and TRL compute it (`torch.std`, Bessel's
  correction). Shao et al. 2024, "DeepSeekMath: Pushing the Limits of Mathematical
  Reasoning in Open Language Models" (GRPO).
- `drgrpo`: r - mean, no division by the standard deviation, which weights
  groups by their difficulty (too easy and too hard groups have a small std and so
  get scaled up under GRPO). Liu et al. 2025, "Understanding R1-Zero-Like Training:
  A Critical Perspective" (Dr. GRPO); its other half, no per-sequence length
  normalisation in the loss, is the learner's `loss aggregation`.
- `tree`: segment credit. A token gets the mean reward of the leaves whose path
  holds it, minus the group mean: a shared prefix is worth what its continuations
  achieved on average, so a turn every leaf below got right is not blamed for a
  later mistake of one of them. After Hou et al. 2025, "TreeRL: LLM Reinforcement
  Learning with On-Policy Tree Search" (ACL 2025), whose global advantage of a
  node is the mean of its leaves minus the root's value; unlike TreeRL there is no
  local term and no 1/sqrt(leaves) reweighting.
- `sibling`: contrast at the branch point only. A rollout's tokens get its reward
  minus the mean over the rollouts that leave the same state: the branches of the
  same parent at the same boundary, and the parent itself, whose own continuation
  from that boundary is the branch they are compared with (without it a lone branch
  at a boundary would have nothing to compare with). Roots are contrasted with the
  other roots. This is the local advantage of TreeRL (a node's value minus its
  parent's), taken at the point where a branch diverged.

A group whose rewards are all equal (or that has one rollout) gives every token a
zero advantage in every mode; `sprout.train.groups` reports such groups.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sprout.errors import SproutError

Credit = Literal["grpo", "drgrpo", "tree", "sibling"]
CREDITS: tuple[Credit, ...] = ("grpo", "drgrpo", "tree", "sibling")
EPSILON = 1e-6
"""Added to GRPO's standard deviation (verl's default), so a near-constant group stays finite."""


def zero_variance(rewards: Sequence[float]) -> bool:
    """Every reward equal (or a single one): no rollout is better than another."""
    return len(set(rewards)) <= 1


class CreditError(SproutError, ValueError):
    """A credit mode sprout does not have, or a group that cannot be credited."""


@dataclass(frozen=True)
class Leaf:
    """One rollout of a group as credit sees it: where it branched from, and its reward."""

    attempt_id: int
    parent_id: int | None
    """None for a root (or a branch whose parent is not in the group)."""
    boundary: int
    reward: float


class GroupCredit:
    """The advantages of one group: `credit(attempt_id, turn_index)` for a turn that attempt
    produced itself."""

    def __init__(
        self, leaves: Sequence[Leaf], mode: Credit = "grpo", *, epsilon: float = EPSILON
    ) -> None:
        if mode not in CREDITS:
            raise CreditError(f"credit {mode!r}: expected one of {', '.join(CREDITS)}")
        if not leaves:
            raise CreditError("credit: a group needs at least one rollout")
        self.mode = mode
        self.epsilon = epsilon
        self.leaves = {leaf.attempt_id: leaf for leaf in leaves}
        rewards = [leaf.reward for leaf in leaves]
        self.mean = sum(rewards) / len(rewards)
        self.zero_variance = zero_variance(rewards)
        self.std = (
            0.0
            if len(rewards) < 2
            else math.sqrt(sum((r - self.mean) ** 2 for r in rewards) / (len(rewards) - 1))
        )

    def __call__(self, attempt_id: int, turn_index: int) -> float:
        """The advantage of every token of turn `turn_index`, produced by `attempt_id`."""
        if attempt_id not in self.leaves:
            raise CreditError(f"credit: attempt {attempt_id} is not in this group")
        if self.zero_variance:
            return 0.0
        leaf = self.leaves[attempt_id]
        if self.mode == "grpo":
            return (leaf.reward - self.mean) / (self.std + self.epsilon)
        if self.mode == "drgrpo":
            return leaf.reward - self.mean
        if self.mode == "tree":
            below = [
                other.reward
                for other in self.leaves.values()
                if self._holds(other, leaf, turn_index)
            ]
            return sum(below) / len(below) - self.mean
        siblings = [
            other.reward
            for other in self.leaves.values()
            if (other.parent_id, other.boundary) == (leaf.parent_id, leaf.boundary)
            or (leaf.parent_id is not None and other.attempt_id == leaf.parent_id)
        ]
        return leaf.reward - sum(siblings) / len(siblings)

    def _holds(self, leaf: Leaf, producer: Leaf, turn_index: int) -> bool:
        """Whether `leaf`'s path holds turn `turn_index` of `producer`: a branch holds its
        parent's turns up to its boundary, its grandparent's up to the smaller of the two
        boundaries, and so on up the tree."""
        cap = math.inf
        current: Leaf | None = leaf
        while current is not None:
            if current.attempt_id == producer.attempt_id:
                return turn_index <= cap
            cap = min(cap, current.boundary)
            current = self.leaves.get(current.parent_id) if current.parent_id is not None else None
        return False
