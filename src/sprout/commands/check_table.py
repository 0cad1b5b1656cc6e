"""The table `sprout tasks check` prints: a header, one row per task as its verdicts come,
a summary line, what failed under it and the tasks' warnings. Rows are printed from
records (`sprout.pipeline.check_record`), so that a row of an earlier check, read back
from --results, prints as it did then."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sprout.pipeline.check_record import CheckRecord
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


def record_of(result: CheckResult, *, loaded: bool = True) -> CheckRecord:
    """`result` as its row shows it; `loaded` False for a task that did not load."""
    untouched = outcome(result.untouched, expected=0) if result.untouched_ran else "NO REPORT"
    return CheckRecord(
        task_id=result.task_id,
        problem=result.problem,
        untouched=untouched,
        oracle=outcome(result.oracle, expected=1),
        seconds=result.seconds,
        warnings=result.warnings,
        detail=result.detail,
        loaded=loaded,
    )


RECORDED = "(recorded)"
"""After the problem of a row read back from --results rather than checked now."""


def table_row(record: CheckRecord, width: int, *, recorded: bool = False) -> str:
    """One task's line: both verdicts, the time it took, and its problem or "ok";
    `recorded`: read from --results, checked by an earlier check."""
    cells = (
        record.task_id.ljust(width),
        record.untouched.ljust(_VERDICT_WIDTH),
        record.oracle.ljust(_VERDICT_WIDTH),
        f"{record.seconds:7.1f}",
        record.problem or "ok",
    )
    return "  ".join(cells) + (f" {RECORDED}" if recorded else "")


def summary_line(records: list[CheckRecord], recorded: int = 0, results: str = "") -> str:
    """ "8 tasks: 7 ok, 1 broken", and "(3 from FILE)" when `recorded` of them were read
    back from --results `results`."""
    broken = sum(not record.ok for record in records)
    noun = "task" if len(records) == 1 else "tasks"
    line = f"{len(records)} {noun}: {len(records) - broken} ok, {broken} broken"
    return line + (f" ({recorded} from {results})" if recorded else "")


def warning_lines(records: list[CheckRecord]) -> list[str]:
    """Each distinct warning once, with the tasks it concerns (see `grouped_warnings`)."""
    return grouped_warnings((record.task_id, record.warnings) for record in records)


def detail_lines(records: list[CheckRecord]) -> list[str]:
    """Under the table: for each broken task, the last lines of what failed."""
    lines = []
    for record in records:
        if not record.ok and record.detail:
            lines.append(f"--- {record.task_id}: {record.problem}")
            lines += ["    " + line for line in record.detail.splitlines()]
    return lines
