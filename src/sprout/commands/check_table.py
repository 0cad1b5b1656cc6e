"""The table `sprout tasks check` prints: a header, one row per task as its verdicts come,
a summary line, what failed under it and the tasks' warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sprout.tasks.discover import grouped_warnings
from sprout.tree import passes

if TYPE_CHECKING:
    from sprout.pipeline.task_check import CheckResult
    from sprout.verify import Diagnostics


def outcome(diagnostics: Diagnostics | None, expected: float) -> str:
    """A verdict cell: lower case when it is what a sound task gives, upper case otherwise."""
    if diagnostics is None:
        return "-"
    passed = passes(diagnostics.reward)
    word = "pass" if passed else "fail"
    if passed != passes(expected):
        word = word.upper()
    ran = diagnostics.passed + diagnostics.failed + diagnostics.errored
    return f"{word} ({diagnostics.passed} of {ran} tests)" if ran else word


_VERDICT_WIDTH = 22


def table_header(width: int) -> str:
    """The table's first line; `width` is that of the longest task id."""
    cells = ("task".ljust(width), "untouched".ljust(_VERDICT_WIDTH), "oracle".ljust(_VERDICT_WIDTH))
    return "  ".join((*cells, "seconds", "problem"))


def table_row(result: CheckResult, width: int) -> str:
    """One task's line: both verdicts, the time it took, and its problem or "ok"."""
    untouched = outcome(result.untouched, expected=0) if result.untouched_ran else "NO REPORT"
    cells = (
        result.task_id.ljust(width),
        untouched.ljust(_VERDICT_WIDTH),
        outcome(result.oracle, expected=1).ljust(_VERDICT_WIDTH),
        f"{result.seconds:7.1f}",
    )
    return "  ".join((*cells, result.problem or "ok"))


def summary_line(results: list[CheckResult]) -> str:
    """ "8 tasks: 7 ok, 1 broken"."""
    broken = sum(not result.ok for result in results)
    noun = "task" if len(results) == 1 else "tasks"
    return f"{len(results)} {noun}: {len(results) - broken} ok, {broken} broken"


def warning_lines(results: list[CheckResult]) -> list[str]:
    """Each distinct warning once, with the tasks it concerns (see `grouped_warnings`)."""
    return grouped_warnings((result.task_id, result.warnings) for result in results)


def detail_lines(results: list[CheckResult]) -> list[str]:
    """Under the table: for each broken task, the last lines of what failed."""
    lines = []
    for result in results:
        if not result.ok and result.detail:
            lines.append(f"--- {result.task_id}: {result.problem}")
            lines += ["    " + line for line in result.detail.splitlines()]
    return lines
