"""SWE-rebench V2's rule on a test log: stdout then stderr to the row's parser, durations out
of the names, resolved exactly when the tests that passed are the expected ones; a log that
never came and a parser that crashes are no verdict."""

from __future__ import annotations

import pytest

from sprout.task import RebenchGrading
from sprout.verify import MissingResults
from sprout.verify.swerebench_grading import grade, without_timing

GRADING = RebenchGrading(
    log_parser="parse_log_jq", fail_to_pass=("t_add.sh", "t_mul.sh"), pass_to_pass=("t_sub.sh",)
)
OUT, ERR = GRADING.logs


def logs(stdout: str, stderr: str = "") -> dict[str, bytes]:
    return {OUT: stdout.encode(), ERR: stderr.encode()}


def test_every_expected_test_passing_and_no_other_is_resolved() -> None:
    """The runner's lines, some on stderr: the parser reads both, stdout first."""
    verdict = grade(
        logs("make[1]: Entering\nPASS: t_add.sh\nPASS: t_sub.sh\n", "PASS: t_mul.sh\n"),
        GRADING,
        0,
        "calc",
    )
    assert verdict.reward == 1.0
    assert [(t.name, t.outcome) for t in verdict.tests] == [
        ("t_add.sh", "passed"),
        ("t_mul.sh", "passed"),
        ("t_sub.sh", "passed"),
    ]
    assert verdict.source == "swe-rebench:/logs/verifier/stdout.log,/logs/verifier/stderr.log"
    assert "graded as SWE-rebench V2's evaluation grades (parse_log_jq, swebench " in (
        verdict.summary
    )


def test_one_expected_test_failing_or_missing_is_not_resolved() -> None:
    verdict = grade(logs("PASS: t_add.sh\nFAIL: t_mul.sh\n"), GRADING, 2, "calc")
    assert verdict.reward == 0.0
    assert [(t.name, t.outcome, t.message) for t in verdict.tests] == [
        ("t_add.sh", "passed", ""),
        ("t_mul.sh", "failed", "FAILED"),
        ("t_sub.sh", "failed", "not in the log"),
    ]


def test_a_test_that_passes_besides_the_expected_ones_is_not_resolved() -> None:
    """The publisher's rule compares the passed tests with the expected ones for equality."""
    log = "PASS: t_add.sh\nPASS: t_mul.sh\nPASS: t_sub.sh\nPASS: t_new.sh\n"
    verdict = grade(logs(log), GRADING, 0, "calc")
    assert verdict.reward == 0.0
    assert (verdict.tests[-1].name, verdict.tests[-1].outcome) == ("t_new.sh", "failed")
    assert "not among FAIL_TO_PASS and PASS_TO_PASS" in verdict.tests[-1].message


def test_durations_in_names_are_taken_out_on_both_sides() -> None:
    assert without_timing("Suite test one [1.34 ms]") == "Suite test one"
    assert without_timing("parses input in 29.08 msec") == "parses input"
    assert without_timing("TestFoo (1.234s)") == "TestFoo"
    assert without_timing("TestFoo (12ms)") == "TestFoo"
    assert without_timing("keeps (a note)") == "keeps (a note)"
    timed = RebenchGrading(
        log_parser="parse_log_jq",
        fail_to_pass=("t_add.sh (0.5s)",),
        pass_to_pass=("t_sub.sh [3 ms]",),
    )
    verdict = grade(logs("PASS: t_add.sh (0.9s)\nPASS: t_sub.sh\n"), timed, 0, "calc")
    assert verdict.reward == 1.0


def test_no_test_output_is_the_attempts_zero() -> None:
    """The test patch did not apply (set -e stopped the script): an empty map, a mismatch."""
    verdict = grade(logs("", "error: patch failed: tests/t_add.sh:1\n"), GRADING, 1, "calc")
    assert verdict.reward == 0.0


def test_no_log_at_all_is_no_verdict() -> None:
    with pytest.raises(MissingResults, match=r"task calc: the evaluation script left no "):
        grade({}, GRADING, 127, "calc")


def test_a_parser_that_crashes_is_no_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    from sprout import logparsers

    def broken(log: str) -> dict[str, str]:
        raise IndexError("list index out of range")

    monkeypatch.setattr(logparsers, "find", lambda name: broken)
    with pytest.raises(MissingResults, match=r"the parser parse_log_jq crashed on the test log"):
        grade(logs("PASS: t_add.sh\n"), GRADING, 0, "calc")
