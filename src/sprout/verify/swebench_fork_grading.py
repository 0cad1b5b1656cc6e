"""Grading an eval log as the forks of SWE-bench's harness that datasets were published
with grade it: SWE-rebench V1's and SWE-Gym's.

Both read the log as SWE-bench's harness did before the `swebench` package's later checks.
A log holding one of the harness's failure codes (the patch did not apply, the reset
failed, the tests errored or timed out) has no results. SWE-rebench's fork then needs both
test-output markers and reads only the text between them; SWE-Gym's (the harness of
SWE-bench 2.0, which had no markers) needs git's "Applied patch" line and reads the whole
log, and also takes "Failed to reset task environment" for a failure. The text goes to the
row's parser (by name, the older readings sprout keeps in `sprout.logparsers`). A
FAIL_TO_PASS or PASS_TO_PASS test succeeds when it PASSED (or XFAIL), fails when it is
missing or FAILED or ERROR, and counts neither way when SKIPPED; resolved when none fails.
Written here from those rules; nothing of the forks is copied.
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
RESET_FAILED_2_0 = "Failed to reset task environment"
APPLIED = "applied patch"
"""What `git apply -v` prints, lower-cased, which SWE-Gym's fork needs in the log."""
FORKS = {"swe-rebench": "SWE-rebench V1's", "swe-gym": "SWE-Gym's"}
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
SUCCEEDS = ("PASSED", "XFAIL")
FAILS = ("FAILED", "ERROR")


def grade(log: str, grading: SweBenchGrading, exit_code: int | None, task: str) -> Diagnostics:
    """Reward 1 exactly when the fork calls the log fully resolved."""
    source = Provenance("swebench", (grading.log,))
    rule = f"graded as {FORKS.get(grading.harness, grading.harness)} harness grades " + (
        f"({grading.log_parser})"
    )
    statuses = _statuses(_tested(log, grading.harness), grading.log_parser, task)
    if statuses is None:
        note = (
            f"{rule}: no test results the harness accepts (the test patch did not apply, the "
            "tests errored or timed out, or the log lacks what the harness looks for)"
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


def _tested(log: str, harness: str) -> str | None:
    """The part of the log the fork hands its parser; None when it finds no results."""
    if any(code in log for code in FAILURE_CODES):
        return None
    if harness == "swe-gym":
        return None if RESET_FAILED_2_0 in log or APPLIED not in log.lower() else log
    if START not in log or END not in log:
        return None
    return log.split(START)[1].split(END)[0]


def _statuses(tested: str | None, name: str, task: str) -> dict[str, str] | None:
    """The parser's statuses of the tested text; a parser that crashes is no verdict."""
    if tested is None:
        return None
    parser = logparsers.find(name)
    if parser is None:
        raise ResultsError(f"task {task}: log parser {name!r}: no such parser")
    try:
        return parser(tested)
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
