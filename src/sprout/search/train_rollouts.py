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
  has nothing to review, so its boundaries come from the heuristic), or one of
  the pickers of `sprout.search.boundaries`: `heuristic` (the roles' candidate
  boundaries; no model call), `uniform` (drawn from 0..last-1 with `method.seed`),
  `entropy` (before the highest-entropy actor turns; needs log-probabilities).

Root k's children are round k, and so is the review that planned them. Like
every schedule it reads the run database first: roots, reviews and children already
recorded are reused, so a resumed run completes the same group.
"""

from __future__ import annotations

import dataclasses
from functools import partial

from sprout.roles import Analyst, BranchPlan, Reviewer
from sprout.search.boundaries import heuristic, highest_entropy, take, uniform
from sprout.search.rounds import complete_round
from sprout.search.rounds import roots as start_roots
from sprout.search.schedules import SearchError, _analyse
from sprout.search.task_search import Search
from sprout.tree import Attempt


def run_training(search: Search, analyst: Analyst, reviewer: Reviewer) -> None:
    """Roots; then each root's children, guided iff every root failed; all played."""
    roots = search.play(start_roots(search))
    guided = not any(root.passed for root in roots)
    children: list[Attempt] = []
    for number, root in enumerate(roots, start=1):
        mine = [a for a in search.attempts() if a.parent_id == root.id]
        plans = partial(_plans, search, root, number, guided, analyst, reviewer)
        children += complete_round(search, number, mine, search.method.children, plans)
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
    children = search.method.children
    if selector == "uniform":
        # the method's seed, the task and the root's position: the same draws on a resume
        seed = f"{search.method.seed}:{search.task.id}:{number}"
        return uniform(search.tree, root, children, seed)
    if selector == "entropy":
        ranked = highest_entropy(search.tree, [root])
        if not ranked:
            raise SearchError(
                f"train-rollouts --selector entropy: model {search.actor.model.name} returned no "
                f"log-probabilities for attempt {root.id}; use a server that returns logprobs, "
                "or another --selector"
            )
    else:  # `heuristic`, and `reviewer` on a root that passed: it has nothing to review
        ranked = heuristic(search.tree, search.task, root)
    return take(ranked, children)
