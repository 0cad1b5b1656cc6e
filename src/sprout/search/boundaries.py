"""Where unguided branches start: the boundary pickers of the schedules, one home each.

An unguided branch has no starting turn; it continues by itself from a boundary of its
parent, so the whole choice is which boundary. That choice is search policy, made here
for every schedule that makes one: the `entropy` schedule (`schedules.run_entropy`) and
the training schedule's unguided children (`training`, by `method.selector`):

- `highest_entropy`: before the actor turns whose replies were least certain;
- `heuristic`: the roles' candidate boundaries (`candidate_boundaries`: before the
  turns that touched the files the failing tests name, else before the latest edits,
  then 0), with no model call;
- `uniform`: drawn uniformly, from a seed.

The first two rank plans, best first; `take` picks as many as a round wants from them.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence

from sprout.roles import BranchPlan, candidate_boundaries
from sprout.task import Task
from sprout.tree import Attempt, RolloutTree


def highest_entropy(tree: RolloutTree, parents: Sequence[Attempt]) -> list[BranchPlan]:
    """A plan before each actor turn of `parents` (their own turns) whose reply has an
    entropy, highest first (ties: the lower attempt id, then the earlier turn); empty when
    the model returned no log-probabilities. A turn's entropy is the mean per-token
    entropy of its reply: branching at boundary `index - 1` asks the model for that turn
    again, from the same context, where it was least sure of what to do."""
    scored = sorted(
        (
            (turn.entropy, attempt.id, turn.index - 1)
            for attempt in parents
            for turn in tree.own_turns(attempt)
            if turn.author == "actor" and turn.entropy is not None
        ),
        key=lambda item: (-item[0], item[1], item[2]),
    )
    return [
        BranchPlan(parent, boundary, None, f"turn {boundary + 1} has entropy {value:.3f}")
        for value, parent, boundary in scored
    ]


def heuristic(tree: RolloutTree, task: Task, root: Attempt) -> list[BranchPlan]:
    """A plan at each of the heuristic's candidate boundaries of `root`, best first: the
    reading the analyst's fallback makes, for a schedule that asks no analyst."""
    found = candidate_boundaries(tree, task, root)
    return [
        BranchPlan(root.id, b, None, f"heuristic: candidate {n + 1}") for n, b in enumerate(found)
    ]


def uniform(tree: RolloutTree, root: Attempt, count: int, seed: str) -> list[BranchPlan]:
    """`count` plans at boundaries drawn uniformly from 0..last-1 of `root` (resuming after
    its last turn would only follow a submission), by a generator seeded with `seed`: the
    same seed draws the same boundaries, in a resumed run and in a rerun."""
    rng = random.Random(seed)
    last = tree.last_index(root)
    draws = [rng.randrange(max(last, 1)) for _ in range(count)]
    return [BranchPlan(root.id, b, None, f"uniform: boundary {b} of 0..{last - 1}") for b in draws]


def take(
    ranked: Sequence[BranchPlan], count: int, tried: Collection[tuple[int, int]] = ()
) -> list[BranchPlan]:
    """`count` of the `ranked` plans (best first, at least one), skipping those whose
    (parent, boundary) is in `tried` unless every one is, and cycling when there are fewer
    than `count`: a round never repeats a branch point while another is left."""
    fresh = [plan for plan in ranked if (plan.parent_id, plan.boundary) not in tried] or ranked
    return [fresh[n % len(fresh)] for n in range(count)]
