"""Grading a SWE-bench log as SWE-bench's own harness grades it, with the `swebench` package.

The package's parser for the row's repository (`log_parsers.PARSER_REGISTRY`) reads
the test status of every test from the eval script's output, between the harness's
start and end markers; its rules (`grading.get_logs_eval`, `get_eval_tests_report`,
`get_resolution_status`) then decide: resolved only when every FAIL_TO_PASS test
passes and no PASS_TO_PASS test broke, a skipped FAIL_TO_PASS test counting as
failed, a log whose exit code contradicts its statuses counting as no results.
sprout only turns the same verdict into its reward and diagnostics, so a resolved
rate here is one the leaderboard would give. The tables are the package's: none
is copied here.
"""

from __future__ import annotations

import tempfile
from importlib import metadata
from typing import Any

from sprout.task import SweBenchGrading
from sprout.verify.results import diagnose
from sprout.verify.types import Diagnostics, Outcome, Provenance, ResultsError, TestResult

OUTCOMES: dict[str, Outcome] = {
    "PASSED": "passed",
    "XFAIL": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
}
"""The package's test statuses as sprout's outcomes (an expected failure is a pass there)."""


def _package() -> Any:
    try:
        from swebench.harness import grading
    except ImportError:
        raise ResultsError(
            "SWE-bench rows are graded by the swebench package: pip install 'sprout-rl[swebench]'"
        ) from None
    return grading


def package_version() -> str:
    return metadata.version("swebench")


def harness_spec(grading: SweBenchGrading) -> Any:
    """The package's TestSpec for `grading` (no image or script: grading reads neither)."""
    from swebench.types import TestSpec

    return TestSpec(
        instance_id=grading.instance_id,
        image="",
        eval_script_list=[],
        repo=grading.repo,
        version=grading.version,
        FAIL_TO_PASS=list(grading.fail_to_pass),
        PASS_TO_PASS=list(grading.pass_to_pass),
        log_parser=grading.log_parser,
        eval_type=grading.eval_type,
    )


def status_map(log: str, grading: SweBenchGrading) -> tuple[dict[str, str], bool]:
    """(each test's status, whether the log holds a run the harness accepts)."""
    package = _package()
    spec = harness_spec(grading)
    with tempfile.NamedTemporaryFile("w", suffix=".log", encoding="utf-8") as handle:
        handle.write(log)
        handle.flush()
        statuses, found = package.get_logs_eval(spec, handle.name)
    return dict(statuses), bool(found)


def grade(log: str, grading: SweBenchGrading, exit_code: int | None) -> Diagnostics:
    """Reward 1 exactly when SWE-bench's harness calls the log resolved."""
    package = _package()
    from swebench.harness.constants import FAIL_TO_PASS, PASS_TO_PASS, EvalType, ResolvedStatus

    statuses, found = status_map(log, grading)
    how = f"swebench {package_version()} {grading.log_parser}, {grading.eval_type}"
    source = Provenance("swebench", (grading.log,))
    if not found:
        note = (
            f"graded by {how}: no test results the harness accepts (the test patch did not "
            "apply, the tests errored or timed out, or the log has no test output markers)"
        )
        return diagnose([], source=source, log=log, exit_code=exit_code, reward=0.0, notes=[note])
    reference = {
        "instance_id": grading.instance_id,
        FAIL_TO_PASS: list(grading.fail_to_pass),
        PASS_TO_PASS: list(grading.pass_to_pass),
    }
    report = package.get_eval_tests_report(
        statuses, reference, eval_type=EvalType(grading.eval_type)
    )
    resolved = package.get_resolution_status(report) == ResolvedStatus.FULL.value
    failing = {*report[FAIL_TO_PASS]["failure"], *report[PASS_TO_PASS]["failure"]}
    tests = [
        _result(name, statuses, failing)
        for name in dict.fromkeys([*grading.fail_to_pass, *grading.pass_to_pass])
    ]
    return diagnose(
        tests,
        source=source,
        log=log,
        exit_code=exit_code,
        reward=1.0 if resolved else 0.0,
        notes=[f"graded by {how}"],
    )


def _result(name: str, statuses: dict[str, str], failing: set[str]) -> TestResult:
    """One required test as the harness judged it."""
    status = statuses.get(name)
    if status is None:
        judged: Outcome = "failed" if name in failing else "passed"
        return TestResult(name, judged, "not in the log" if judged == "failed" else "")
    outcome = OUTCOMES.get(status, "failed")
    if name in failing and outcome == "passed":
        outcome = "failed"
    return TestResult(name, outcome, "" if outcome == "passed" else status)
