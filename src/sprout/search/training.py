"""The training schedule, `train-rollouts`: one GRPO group per task from roots and their children.

Each task gets `roots` roots (default 2) and `children` children per root
(default 3), all played to the end: GRPO needs every reward of the group.

- When every root fails, plain GRPO would get no gradient from the task. The
  children are then *guided*: for each root the analyst reads it and one
  review plans that root's children, each starting with a turn the reviewer
  wrote in the actor's voice (the turn the policy is to learn).
- Otherwise the children are *unguided*: they continue by themselves from a
  boundary of their root chosen by `method.selector`:
  `reviewer` (the reviewer's plan without its written turn; a root that passed
  has nothing to review, so its boundaries come from the heuristic),
  `heuristic` (`candidate_boundaries`: before the turns that touched the files
  the failing tests name, else before the latest edits, then 0; no model call),
  `uniform` (a boundary drawn uniformly from 0..last-1 with `method.seed`), or
  `entropy` (before the highest-entropy actor turns; needs log-probabilities).

Root k's children are round k, and so is the review that planned them. Like
every schedule it reads the store first: roots, reviews and children already
recorded are reused, so a resumed run completes the same group.
"""

from __future__ import annotations

import dataclasses
import random

from sprout.roles import Analyst, BranchPlan, Reviewer, candidate_boundaries
from sprout.search.play import Search
from sprout.search.rounds import roots as start_roots
from sprout.search.schedules import SearchError, _analyse
from sprout.tree import Attempt


def run_training(search: Search, analyst: Analyst, reviewer: Reviewer) -> None:
    """Roots; then each root's children, guided iff every root failed; all played."""
    roots = search.play(start_roots(search))
    guided = not any(root.passed for root in roots)
    children: list[Attempt] = []
    for number, root in enumerate(roots, start=1):
        mine = [a for a in search.attempts() if a.parent_id == root.id]
        wanted = search.method.children
        if len(mine) < wanted:
            for plan in _plans(search, root, number, guided, analyst, reviewer)[len(mine) : wanted]:
                mine.append(
                    search.tree.branch(
                        plan.parent_id,
                        plan.boundary,
                        plan.starting_turn,
                        round=number,
                        method=search.method.name,
                    )
                )
        children += mine
    search.play(children)


def _plans(
    search: Search,
    root: Attempt,
    number: int,
    guided: bool,
    analyst: Analyst,
    reviewer: Reviewer,
) -> list[BranchPlan]:
    """`method.children` plans from `root`: reviewed when guided (or when the reviewer selects
    a failed root's boundaries, its turns then dropped), else from the selector."""
    selector = search.method.selector
    if guided or (selector == "reviewer" and root.failed):
        review = reviewer.review(
            search.task,
            method=search.method.name,
            round=number,
            branches=search.method.children,
            candidates=[root],
            analyses=_analyse(search, analyst, [root]),
        )
        if guided:
            return list(review.plans)
        return [dataclasses.replace(plan, starting_turn=None) for plan in review.plans]
    if selector == "uniform":
        return _uniform(search, root, number)
    if selector == "entropy":
        return _highest_entropy(search, root)
    return _heuristic(search, root)


def _cycle(root: Attempt, ranked: list[tuple[int, str]], size: int) -> list[BranchPlan]:
    """`size` unguided plans over `ranked` (boundary, why), best first, cycling when short."""
    return [
        BranchPlan(root.id, boundary, None, why)
        for boundary, why in (ranked[i % len(ranked)] for i in range(size))
    ]


def _heuristic(search: Search, root: Attempt) -> list[BranchPlan]:
    found = candidate_boundaries(search.tree, search.task, root)
    ranked = [(boundary, f"heuristic: candidate {n + 1}") for n, boundary in enumerate(found)]
    return _cycle(root, ranked, search.method.children)


def _uniform(search: Search, root: Attempt, number: int) -> list[BranchPlan]:
    """Boundaries drawn uniformly from 0..last-1 (resuming after the last turn would only
    follow a submission), seeded by the method's seed, the task and the root's position, so
    a resumed run and a rerun draw the same ones."""
    rng = random.Random(f"{search.method.seed}:{search.task.id}:{number}")
    last = search.tree.last_index(root)
    draws = [rng.randrange(max(last, 1)) for _ in range(search.method.children)]
    return [BranchPlan(root.id, b, None, f"uniform: boundary {b} of 0..{last - 1}") for b in draws]


def _highest_entropy(search: Search, root: Attempt) -> list[BranchPlan]:
    """Resample the root's highest-entropy actor turns, highest first (as `run_entropy`)."""
    scored = sorted(
        (
            (turn.entropy, turn.index - 1)
            for turn in search.tree.own_turns(root)
            if turn.author == "actor" and turn.entropy is not None
        ),
        key=lambda item: (-item[0], item[1]),
    )
    if not scored:
        raise SearchError(
            f"train-rollouts --selector entropy: model {search.actor.model.name} returned no "
            f"log-probabilities for attempt {root.id}; use a server that returns logprobs, "
            "or another --selector"
        )
    ranked = [
        (boundary, f"turn {boundary + 1} has entropy {value:.3f}") for value, boundary in scored
    ]
    return _cycle(root, ranked, search.method.children)
