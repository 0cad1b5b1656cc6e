"""Grading a SWE-rebench V2 row's test log as the publisher's evaluation script grades it.

The evaluation hands the container's stdout, then its stderr, to the row's parser
(`install_config.log_parser`), takes timing suffixes out of the test names it returns and
out of the row's test names alike (` [1.34 ms]`, ` in 29.08 msec`, ` (1.234s)` at the end
of a name), and resolves exactly when the sorted names of the tests that PASSED equal the
sorted FAIL_TO_PASS and PASS_TO_PASS: every one of them passed, and no other test did.
Written here from those rules; nothing of the publisher's is copied.

A log that never came to be (the script did not start) is no verdict, the verifier's fault;
so is a parser that crashes on the log. A log with no test results (the test patch did not
apply, the build broke) is the evaluation's mismatch: reward 0, as there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sprout import logparsers
from sprout.logparsers.common import PASSED
from sprout.task import RebenchGrading
from sprout.verify.results import diagnose
from sprout.verify.types import Diagnostics, MissingResults, Provenance, ResultsError, TestResult

_TIMING = (
    re.compile(r"\s*\[\s*\d+(?:\.\d+)?\s*m?s\s*\]\s*$", re.IGNORECASE),
    re.compile(r"\s+in\s+\d+(?:\.\d+)?\s+(?:msec|sec)\b", re.IGNORECASE),
    re.compile(r"\s*\(\s*\d+(?:\.\d+)?\s*m?s\s*\)\s*$", re.IGNORECASE),
)
"""Durations some runners write into a test's name: bracketed, `in N msec`, parenthesised."""


def without_timing(name: str) -> str:
    """`name` less the durations a runner wrote into it, so that two runs name a test alike."""
    for pattern in _TIMING:
        name = pattern.sub("", name)
    return name.strip()


def grade(
    logs: Mapping[str, bytes], grading: RebenchGrading, exit_code: int | None, task: str
) -> Diagnostics:
    """Reward 1 exactly when the publisher's evaluation would find the passed tests equal to
    the expected ones; each expected test shown with its status, then any other test that
    passed (which the rule counts against the attempt too)."""
    stdout_path = grading.logs[0]
    if stdout_path not in logs and exit_code is not None:
        raise MissingResults(
            f"task {task}: the evaluation script left no {stdout_path} (exit status {exit_code})"
        )
    log = "".join(logs.get(path, b"").decode("utf-8", errors="replace") for path in grading.logs)
    source = Provenance("swe-rebench", grading.logs)
    expected = sorted(
        without_timing(name) for name in (*grading.pass_to_pass, *grading.fail_to_pass)
    )
    rule = (
        f"graded as SWE-rebench V2's evaluation grades ({grading.log_parser}, "
        f"{logparsers.where(grading.log_parser)}): the tests that passed must be exactly the "
        f"{len(expected)} of FAIL_TO_PASS and PASS_TO_PASS"
    )
    statuses = _parse(log, grading.log_parser, task)
    passed = sorted(name for name, status in statuses.items() if status == PASSED)
    tests = [_result(name, statuses) for name in dict.fromkeys(expected)]
    tests += [
        TestResult(name, "failed", "PASSED, and not among FAIL_TO_PASS and PASS_TO_PASS")
        for name in passed
        if name not in set(expected)
    ]
    return diagnose(
        tests,
        source=source,
        log=log,
        exit_code=exit_code,
        reward=1.0 if passed == expected else 0.0,
        notes=[rule],
    )


def _parse(log: str, name: str, task: str) -> dict[str, str]:
    """The parser's statuses, names without timing; its crash is the verifier's fault."""
    parser = logparsers.find(name)
    if parser is None:
        raise ResultsError(
            f"task {task}: install_config.log_parser {name!r}: no parser of that name here "
            "(the swebench package's are read only where it is installed)"
        )
    try:
        found = parser(log)
    except Exception as error:  # a parser's bug on an odd log is no verdict on the attempt
        raise MissingResults(
            f"task {task}: the parser {name} crashed on the test log: "
            f"{type(error).__name__}: {error}"
        ) from error
    return {without_timing(test): status for test, status in found.items()}


def _result(name: str, statuses: Mapping[str, str]) -> TestResult:
    """One expected test: passed when the parser says PASSED."""
    status = statuses.get(name)
    if status == PASSED:
        return TestResult(name, "passed")
    if status is None:
        return TestResult(name, "failed", "not in the log")
    return TestResult(name, "error" if status == "ERROR" else "failed", status)
