"""The steps a role's prompt shrinks by: never more detailed than the step before, down to
the briefest; the reviewer gives up its histories before any analysis."""

from __future__ import annotations

import dataclasses
import itertools

from sprout.roles.detail import (
    ANALYST_LADDER,
    BRIEFEST,
    FULL,
    HISTORIES,
    NOTES,
    REVIEWER_LADDER,
    STEPS,
)


def test_each_ladder_starts_full_shrinks_step_by_step_and_ends_briefest():
    for ladder in (ANALYST_LADDER, REVIEWER_LADDER):
        assert ladder[0] == FULL
        for before, after in itertools.pairwise(ladder):
            pairs = zip(dataclasses.astuple(before), dataclasses.astuple(after), strict=True)
            assert all(b >= a for b, a in pairs)
            assert before != after
    assert REVIEWER_LADDER[-1].analysis == BRIEFEST.analysis
    assert ANALYST_LADDER[-1].listed == BRIEFEST.listed
    assert ANALYST_LADDER[-1].instruction == BRIEFEST.instruction


def test_the_reviewer_reads_every_analysis_in_full_until_its_histories_are_briefest():
    histories_done = REVIEWER_LADDER[STEPS]
    for step in REVIEWER_LADDER[: STEPS + 1]:
        assert (step.analysis, step.instruction) == (FULL.analysis, FULL.instruction)
    assert all(getattr(histories_done, part) == getattr(BRIEFEST, part) for part in HISTORIES)
    assert all(getattr(REVIEWER_LADDER[-1], part) == getattr(BRIEFEST, part) for part in NOTES)


def test_the_analyst_gives_up_its_attempts_detail_before_the_instruction():
    attempt_done = ANALYST_LADDER[STEPS]
    assert attempt_done.instruction == FULL.instruction
    assert (attempt_done.full, attempt_done.output) == (BRIEFEST.full, BRIEFEST.output)
