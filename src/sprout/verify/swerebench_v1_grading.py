"""Grading a SWE-rebench V1 row's eval log as the publisher's fork of SWE-bench's harness
grades it.

The fork reads the log as SWE-bench's harness did before the `swebench` package's later
checks: a log holding one of the harness's failure codes (the patch did not apply, the
reset failed, the tests errored or timed out) or missing either test-output marker has no
results; otherwise only the text between the markers goes to the row's parser (its name
in `install_config.log_parser`; the older readings sprout keeps in `sprout.logparsers`).
A FAIL_TO_PASS or PASS_TO_PASS test succeeds when it PASSED (or XFAIL), fails when it is
missing or FAILED or ERROR, and counts neither way when SKIPPED; resolved when none fails.
Written here from those rules; nothing of the fork is copied.
"""

from __future__ import annotations

from collections.abc import Mapping

from sprout import logparsers
from sprout.task import SweBenchGrading
from sprout.verify.results import diagnose
from sprout.verify.types import Diagnostics, MissingResults, Provenance, ResultsError, TestResult

FAILURE_CODES = (
    ">>>>> Patch Apply Failed",
    ">>>>> Reset Failed",
    ">>>>> Tests Errored",
    ">>>>> Tests Timed Out",
)
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
SUCCEEDS = ("PASSED", "XFAIL")
FAILS = ("FAILED", "ERROR")


def grade(log: str, grading: SweBenchGrading, exit_code: int | None, task: str) -> Diagnostics:
    """Reward 1 exactly when the fork calls the log fully resolved."""
    source = Provenance("swebench", (grading.log,))
    rule = f"graded as SWE-rebench V1's harness grades ({grading.log_parser})"
    statuses = _statuses(log, grading.log_parser, task)
    if statuses is None:
        note = (
            f"{rule}: no test results the harness accepts (the test patch did not apply, the "
            "tests errored or timed out, or the log has no test output markers)"
        )
        return diagnose([], source=source, log=log, exit_code=exit_code, reward=0.0, notes=[note])
    names = dict.fromkeys([*grading.fail_to_pass, *grading.pass_to_pass])
    tests = [_result(name, statuses) for name in names]
    resolved = not any(test.outcome in ("failed", "error") for test in tests)
    return diagnose(
        tests,
        source=source,
        log=log,
        exit_code=exit_code,
        reward=1.0 if resolved else 0.0,
        notes=[rule],
    )


def _statuses(log: str, name: str, task: str) -> dict[str, str] | None:
    """The parser's statuses of the text between the markers; None for a log with no
    results the fork accepts. A parser that crashes is no verdict on the attempt."""
    if any(code in log for code in FAILURE_CODES) or START not in log or END not in log:
        return None
    parser = logparsers.find(name)
    if parser is None:
        raise ResultsError(f"task {task}: install_config.log_parser {name!r}: no such parser")
    try:
        return parser(log.split(START)[1].split(END)[0])
    except Exception as error:  # a parser's bug on an odd log is no verdict on the attempt
        raise MissingResults(
            f"task {task}: the parser {name} crashed on the test log: "
            f"{type(error).__name__}: {error}"
        ) from error


def _result(name: str, statuses: Mapping[str, str]) -> TestResult:
    """One required test as the fork judges it."""
    status = statuses.get(name)
    if status in SUCCEEDS:
        return TestResult(name, "passed")
    if status is None:
        return TestResult(name, "failed", "not in the log")
    if status in FAILS:
        return TestResult(name, "error" if status == "ERROR" else "failed", status)
    return TestResult(name, "skipped", f"{status}: the harness counts it neither way")
