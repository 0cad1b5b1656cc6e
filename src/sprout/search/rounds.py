"""Roots and rounds: the two phases every branching schedule shares.

A *root* is an attempt from checkpoint 0 with no starting turn (a method has
`method.roots` of them per task); a *round* is one batch of branches planned
together after the attempts before it have been played and verified (the
`sprout` default is 4 then 3 branches: `method.rounds`). Schedules differ only
in how a round is planned (`sprout.search.schedules`); the training schedule
makes root k's children round k (`sprout.search.train_rollouts`). Both create a round's
missing branches one way (`complete_round`).

Both read the run database first, so calling them again on the same one reuses the
roots and branches already recorded: that is all `sprout run --resume` needs.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from sprout.roles import BranchPlan
from sprout.search.methods import Method
from sprout.search.task_search import Search
from sprout.tree import Attempt

RoundPlanner = Callable[[int, int], list[BranchPlan]]
"""`plan(round, size)` -> the branches of round `round` (1-based), `size` of them wanted."""


def roots(search: Search) -> list[Attempt]:
    """The method's roots, created up to `method.roots` (a resumed run reuses its own); a
    root that another restarted (its checkpoint lost with its node) is not one of them."""
    found = [a for a in search.attempts() if a.kind == "root"]
    restarted = {a.restarts for a in found}
    existing = [a for a in found if a.id not in restarted]
    for _ in range(search.method.roots - len(existing)):
        existing.append(
            search.tree.root(
                search.task.id, search.prefix, search.base_checkpoint, method=search.method.name
            )
        )
    return existing


def play_rounds(search: Search, plan: RoundPlanner) -> None:
    """Roots, then `method.rounds` rounds of branches, each planned by `plan(round, size)`;
    stops before a round when nothing failed, or (with stop-at-pass) once one passed."""
    method: Method = search.method
    search.play(roots(search))
    for number, size in enumerate(method.rounds, start=1):
        search.halt.check()
        attempts = search.attempts()
        if method.stop_at_pass and search.has_passed():
            return
        if not any(a.failed for a in attempts):
            return
        this_round = [a for a in attempts if a.kind == "branch" and a.round == number]
        search.play(complete_round(search, number, this_round, size, partial(plan, number, size)))


def complete_round(
    search: Search,
    number: int,
    existing: list[Attempt],
    size: int,
    plans: Callable[[], list[BranchPlan]],
) -> list[Attempt]:
    """Round `number`'s branches: the `existing` ones recorded already, then as many more as
    make `size`, created from `plans()` past the first `len(existing)`. A resumed run so
    creates only what it had not (its stored review gives the same plans in the same
    order), and `plans` is called only when a branch is missing: it may ask the roles."""
    if len(existing) >= size:
        return existing
    made = [
        search.tree.branch(
            plan.parent_id,
            plan.boundary,
            plan.starting_turn,
            round=number,
            method=search.method.name,
        )
        for plan in plans()[len(existing) : size]
    ]
    return [*existing, *made]
