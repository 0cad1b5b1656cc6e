"""Roots and rounds: the two phases every branching schedule shares.

A *root* is an attempt from checkpoint 0 with no starting turn (a method has
`method.roots` of them per task); a *round* is one batch of branches planned
together after the attempts before it have been played and verified (the
`sprout` default is 4 then 3 branches: `method.rounds`). Schedules differ only
in how a round is planned (`sprout.search.schedules`); the training schedule
makes root k's children round k (`sprout.search.training`).

Both read the store first, so calling them again on the same store reuses the
roots and branches already recorded: that is all `sprout run --resume` needs.
"""

from __future__ import annotations

from collections.abc import Callable

from sprout.roles import BranchPlan
from sprout.search.methods import Method
from sprout.search.play import Search
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
            search.tree.root(search.task.id, search.prefix, search.base, method=search.method.name)
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
        if len(this_round) < size:
            for branch in plan(number, size)[len(this_round) : size]:
                this_round.append(
                    search.tree.branch(
                        branch.parent_id,
                        branch.boundary,
                        branch.starting_turn,
                        round=number,
                        method=method.name,
                    )
                )
        search.play(this_round)
