"""Grading an R2E-Gym row's test log as R2E-Gym grades it.

R2E-Gym runs the image's run_tests.sh (pytest with `-rA` over the hidden tests) and reads
its output, stdout and stderr together, with ANSI colour codes and carriage returns taken
out. Its pytest parser reads only what follows pytest's "short test summary info" line (up
to a second such line): each line that holds PASSED, FAILED or ERROR (tried in that order,
anywhere in the line) gives a test that status, the test named by its id less the file
(the parts after the first "::", joined by "."), less what follows " - " for FAILED and
ERROR; a line with no "::" (a file that failed to import) names the test "". The reward
then compares that map with the row's `expected_output_json`, both with their keys' ANSI
codes taken out and cut at " - ": resolved only when they are equal (the same tests, each
with the same status, tests expected to fail included), else 0. A run that hits R2E-Gym's
limit leaves no map, so 0. Written here from those rules; nothing of R2E-Gym's is copied.

A log with no summary line at all means the runner never ran pytest to its end (run_tests.sh
missing, a crash before the summary): no verdict, the verifier's fault (`MissingResults`),
never the attempt's failure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sprout.task import R2EGymGrading
from sprout.verify.results import diagnose
from sprout.verify.types import Diagnostics, MissingResults, Provenance, TestResult

SUMMARY = "short test summary info"
STATUSES = ("PASSED", "FAILED", "ERROR")
TIMED_OUT = 124
"""`timeout`'s exit status: run_tests.sh ran past R2E-Gym's limit."""
_LOG_NOISE = re.compile(r"\x1b\[[0-9;]*m|\r")
_KEY_COLOUR = re.compile(r"\x1b\[\d+m")
NO_ID = "<no test id>"
"""How diagnostics name the test "" (a summary line with no "::")."""


def clean_log(output: str) -> str:
    """The log as R2E-Gym reads it: no ANSI colour codes, no carriage returns."""
    return _LOG_NOISE.sub("", output)


def parse_statuses(log: str) -> dict[str, str] | None:
    """Each test's status, as R2E-Gym's pytest parser reads `log`; None when the log has no
    "short test summary info" line."""
    if SUMMARY not in log:
        return None
    statuses: dict[str, str] = {}
    for line in log.split(SUMMARY)[1].strip().split("\n"):
        status = next((status for status in STATUSES if status in line), None)
        if status is None:
            continue
        name = ".".join(line.split("::")[1:])
        statuses[name if status == "PASSED" else name.split(" - ")[0]] = status
    return statuses


def normalized(statuses: Mapping[str, str]) -> dict[str, str]:
    """Keys without ANSI colour codes, then cut at " - "; in sorted order of the keys after
    the first step, so that of two keys that become one the last in that order wins."""
    decoloured = {_KEY_COLOUR.sub("", key): value for key, value in statuses.items()}
    return {key.split(" - ")[0]: decoloured[key] for key in sorted(decoloured)}


def grade(
    output: str, grading: R2EGymGrading, exit_code: int | None, task: str | None = None
) -> Diagnostics:
    """Reward 1 exactly when R2E-Gym would call the log resolved; each test shown passed
    when its status is the expected one, else failed, naming both statuses."""
    log = clean_log(output)
    source = Provenance("r2egym", (grading.log,))
    expected = normalized(grading.expected)
    rule = (
        f"graded as R2E-Gym grades: the statuses of {len(expected)} tests must be exactly "
        "expected_output_json's"
    )
    if exit_code == TIMED_OUT:
        note = "run_tests.sh ran past R2E-Gym's limit, which leaves no results"
        return diagnose([], source=source, log=log, exit_code=exit_code, reward=0.0, notes=[note])
    parsed = parse_statuses(log)
    if parsed is None:
        if exit_code is None:  # the verifier's own limit: 0, as for any format
            return diagnose([], source=source, log=log, exit_code=None, reward=0.0, notes=[rule])
        where = f"task {task}: " if task else ""
        raise MissingResults(
            f"{where}run_tests.sh's output has no pytest summary ('{SUMMARY}'): the tests "
            f"did not run to their end (exit status {exit_code})"
        )
    actual = normalized(parsed)
    tests = [_result(name, actual, expected) for name in _names(expected, actual)]
    return diagnose(
        tests,
        source=source,
        log=log,
        exit_code=exit_code,
        reward=1.0 if actual == expected else 0.0,
        notes=[rule],
    )


def _names(expected: Mapping[str, str], actual: Mapping[str, str]) -> list[str]:
    """The expected tests in their order, then those the log has besides."""
    return [*expected, *(name for name in actual if name not in expected)]


def _result(name: str, actual: Mapping[str, str], expected: Mapping[str, str]) -> TestResult:
    """One test: passed when its status is the expected one."""
    got, want = actual.get(name), expected.get(name)
    shown = name or NO_ID
    if got == want:
        return TestResult(shown, "passed")
    if want is None:
        return TestResult(shown, "failed", f"{got}, and not among the expected tests")
    if got is None:
        return TestResult(shown, "failed", f"expected {want}, not in the log")
    return TestResult(shown, "failed", f"expected {want}, got {got}")
