"""The schedules: which attempts to start, from where, and when to stop.

Roots and rounds, which every schedule shares, live in `sprout.search.rounds`;
a schedule says how each round's branches are planned.

Every schedule is written so that calling it again on the same run database
continues where it stopped: roots, reviews and branches already recorded are
reused, never recreated. That is all `sprout run --resume` needs.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sprout.errors import SproutError
from sprout.roles import Analysis, Analyst, BranchPlan, Reviewer
from sprout.search.boundaries import highest_entropy, take
from sprout.search.rounds import play_rounds, roots
from sprout.search.task_search import Search
from sprout.tree import Attempt


class SearchError(SproutError, RuntimeError):
    """A schedule that cannot go on (no log-probabilities for entropy, say)."""


def run_pass_at_k(search: Search) -> None:
    """`k` independent roots, all played: Pass@1 is their mean, Pass@k whether any passed."""
    search.play(roots(search))


def run_sprout(search: Search, analyst: Analyst, reviewer: Reviewer) -> None:
    """Roots; then per round, the analyst on each new failure and the reviewer's branches."""

    def plan(number: int, size: int) -> list[BranchPlan]:
        candidates = [a for a in search.attempts() if a.failed]
        analyses = _analyse(search, analyst, candidates)
        review = reviewer.review(
            search.task,
            method=search.method.name,
            round=number,
            branches=size,
            candidates=candidates,
            analyses=analyses,
        )
        return list(review.plans)

    play_rounds(search, plan)


def run_shepherd(search: Search, supervisor: Reviewer) -> None:
    """Roots; then one round of branches that a supervisor plans from the failed traces,
    reading neither the verifier's diagnostics nor any analysis (our reading of Shepherd)."""

    def plan(number: int, size: int) -> list[BranchPlan]:
        review = supervisor.review(
            search.task,
            method=search.method.name,
            round=number,
            branches=size,
            candidates=[a for a in search.attempts() if a.failed],
            analyses={},
        )
        return list(review.plans)

    play_rounds(search, plan)


def run_entropy(search: Search) -> None:
    """Roots; then per round, unguided branches that resample the highest-entropy turns of
    the failed attempts (`boundaries.highest_entropy`), branch points not yet tried first."""

    def plan(number: int, size: int) -> list[BranchPlan]:
        attempts = search.attempts()
        tried = {(a.parent_id, a.boundary) for a in attempts if a.parent_id is not None}
        ranked = highest_entropy(search.tree, [a for a in attempts if a.failed])
        if not ranked:
            raise SearchError(
                f"entropy: model {search.actor.model.name} returned no log-probabilities for "
                "any turn; use a server that returns logprobs, or another --method"
            )
        return take(ranked, size, tried)

    play_rounds(search, plan)


def _analyse(search: Search, analyst: Analyst, attempts: list[Attempt]) -> dict[int, Analysis]:
    """Analyses of `attempts`, the stored ones reused; new ones concurrently."""
    if not attempts:
        return {}

    def one(attempt: Attempt) -> Analysis:
        with search.slots:
            return analyst.analyse(search.task, attempt)

    with ThreadPoolExecutor(max_workers=len(attempts)) as pool:
        return {
            a.id: analysis for a, analysis in zip(attempts, pool.map(one, attempts), strict=True)
        }
