"""How much of an attempt a role's prompt shows, and the steps by which that shrinks.

`FULL` holds the caps every prompt starts from, in characters (counts where said):
whatever an attempt did, no prompt is longer than they allow. A prompt over the
model's window is rendered again a step briefer (`sprout.roles.fit`): each step of a
phase halves what its parts show above their `BRIEFEST`, and its last step reaches
it. The analyst gives up its attempt's detail before the task's instruction; the
reviewer gives up its histories (the candidates' turn lists, the earlier branches)
before the analyses, which it reads for every candidate at every step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Detail:
    """The caps of one rendering of a role's prompt."""

    instruction: int = 6_000
    text: int = 600
    """A reply's text (its reasoning, its fenced commands left out)."""
    command: int = 300
    output: int = 500
    """The tail of each call's output."""
    full: int = 40_000
    """The turns shown in full, newest first (the analyst shows its newest one in full at
    every step); earlier turns are shown brief."""
    listed: int = 60_000
    """The analyst's whole turn list, full and brief; turns before it are counted."""
    patch: int = 8_000
    """The attempt's patch, both ends kept."""
    failing_tests: int = 12
    """Failing tests shown (a count), each message cut to `test_message`."""
    test_message: int = 800
    log_tail: int = 3_000
    log_tail_with_tests: int = 1_000
    """When the failing tests carry their own messages, the log's tail mostly repeats them."""
    summary: int = 1_000
    """The verifier's summary."""
    candidate_turns: int = 8_000
    """Each candidate's brief turn list in the reviewer's prompt."""
    history_branches: int = 20
    """Earlier branches shown to the reviewer (a count), latest first."""
    starting_turn: int = 1_200
    """An earlier branch's starting turn, as the reviewer's history shows it."""
    analysis: int = 1_500
    """Each free-text field of an analysis, as the reviewer reads it."""


FULL = Detail()
BRIEFEST = Detail(
    instruction=1_000,
    text=100,
    command=100,
    output=200,
    full=0,
    listed=1_000,
    patch=500,
    failing_tests=3,
    test_message=200,
    log_tail=300,
    log_tail_with_tests=200,
    summary=300,
    candidate_turns=1_000,
    history_branches=3,
    starting_turn=200,
    analysis=300,
)
"""The least each part shows: a prompt over the window even so is not sent."""

STEPS = 5
"""Steps per phase: each halves what its parts show above `BRIEFEST`, the last reaches it."""

ATTEMPT = (
    "text",
    "command",
    "output",
    "full",
    "listed",
    "patch",
    "failing_tests",
    "test_message",
    "log_tail",
    "log_tail_with_tests",
    "summary",
)
"""What the analyst shows of its attempt and the verifier's findings."""
HISTORIES = ("candidate_turns", "command", "history_branches", "starting_turn", "summary")
"""What the reviewer shows of the attempts' turns and the earlier branches."""
NOTES = ("analysis", "instruction")
"""The analyses and the task, which the reviewer gives up last."""


def ladder(phases: Sequence[Sequence[str]]) -> tuple[Detail, ...]:
    """`FULL`, then `STEPS` steps per phase, each phase shrinking its parts to `BRIEFEST`."""
    levels = [FULL]
    for parts in phases:
        for step in range(1, STEPS + 1):
            last = levels[-1]
            levels.append(
                dataclasses.replace(
                    last,
                    **{
                        part: _toward(getattr(last, part), getattr(BRIEFEST, part), step == STEPS)
                        for part in parts
                    },
                )
            )
    return tuple(levels)


def _toward(value: int, floor: int, last: bool) -> int:
    return floor if last else floor + max(value - floor, 0) // 2


ANALYST_LADDER = ladder([ATTEMPT, ("instruction",)])
REVIEWER_LADDER = ladder([HISTORIES, NOTES])
"""The reviewer's and Shepherd's supervisor's (which reads no analyses)."""
