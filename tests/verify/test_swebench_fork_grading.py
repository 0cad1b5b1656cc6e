"""SWE-rebench V1's harness on an eval log: only the text between the markers, no results
for a log with a failure code, a skipped required test counted neither way."""

from __future__ import annotations

from sprout.task import SweBenchGrading
from sprout.verify.swebench_fork_grading import grade

GRADING = SweBenchGrading(
    instance_id="acme__calc-12",
    repo="acme/calc",
    log_parser="parse_log_pytest",
    fail_to_pass=("t.py::test_add", "t.py::test_mul"),
    pass_to_pass=("t.py::test_sub",),
    harness="swe-rebench",
)
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"


def log(*lines: str, before: str = "") -> str:
    return "\n".join([before, f"+ : '{START}'", *lines, f"+ : '{END}'", "git checkout"])


def test_every_required_test_passing_between_the_markers_is_resolved() -> None:
    verdict = grade(
        log("PASSED t.py::test_add", "PASSED t.py::test_mul", "PASSED t.py::test_sub"),
        GRADING,
        0,
        "calc",
    )
    assert verdict.reward == 1.0 and [t.outcome for t in verdict.tests] == ["passed"] * 3


def test_lines_outside_the_markers_count_for_nothing() -> None:
    outside = "PASSED t.py::test_mul"
    verdict = grade(
        log("PASSED t.py::test_add", "PASSED t.py::test_sub", before=outside), GRADING, 0, "x"
    )
    assert verdict.reward == 0.0
    assert [(t.name, t.message) for t in verdict.tests if t.outcome == "failed"] == [
        ("t.py::test_mul", "not in the log")
    ]


def test_a_failure_code_or_a_missing_marker_is_no_results() -> None:
    passing = ("PASSED t.py::test_add", "PASSED t.py::test_mul", "PASSED t.py::test_sub")
    for text in (log(*passing, before=">>>>> Patch Apply Failed"), "\n".join(passing)):
        verdict = grade(text, GRADING, 0, "calc")
        assert verdict.reward == 0.0 and verdict.tests == ()
        assert "no test results the harness accepts" in verdict.summary


def test_a_skipped_required_test_counts_neither_way() -> None:
    """The fork's report puts a SKIPPED test in neither list: the others decide."""
    verdict = grade(
        log("PASSED t.py::test_add", "SKIPPED t.py::test_mul", "PASSED t.py::test_sub"),
        GRADING,
        0,
        "calc",
    )
    assert verdict.reward == 1.0
    assert [t.outcome for t in verdict.tests] == ["passed", "skipped", "passed"]
    failing = grade(log("FAILED t.py::test_add", "PASSED t.py::test_mul"), GRADING, 1, "calc")
    assert failing.reward == 0.0
