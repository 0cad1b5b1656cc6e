"""Grading a SWE-smith row's eval log with SWE-smith's own grader.

SWE-smith's verdict is its harness's `get_eval_report`: the text between its traced markers
read by the repository's profile's log parser, then SWE-bench's report of FAIL_TO_PASS and
PASS_TO_PASS, resolved when it is full. It runs in the interpreter that has the swesmith
package (`--swe-smith`, `sprout.tasks.sources.child_python`), given the log and the
instance's fields, so the verdict is the publisher's own. A grader that cannot run is the
verifier's fault, never the attempt's failure; a log with no results the grader accepts
(no markers: the tests never ran to their end) scores 0, as there.
"""

from __future__ import annotations

from sprout.task import SweSmithGrading
from sprout.tasks.sources.child_python import ChildFailed, run_child
from sprout.verify.results import diagnose
from sprout.verify.types import Diagnostics, MissingResults, Provenance, TestResult

GRADER = """
import json, sys, tempfile
from swesmith.harness.grading import get_eval_report
given = json.load(sys.stdin)
with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as handle:
    handle.write(given["log"])
instance = given["instance"]
prediction = {"instance_id": instance["instance_id"], "model_patch": "(the attempt's tree)"}
json.dump(get_eval_report(prediction, instance, handle.name), sys.stdout, default=str)
"""
"""Run in the swesmith interpreter: the publisher's report on the log."""


def grade(log: str, grading: SweSmithGrading, exit_code: int | None, task: str) -> Diagnostics:
    """Reward 1 exactly when SWE-smith's grader calls the log resolved."""
    try:
        report = run_child(
            grading.python,
            GRADER,
            given={"log": log, "instance": grading.instance},
            where=f"task {task}: --swe-smith {grading.python}",
            failing="SWE-smith's grader failed",
        )
    except ChildFailed as error:
        raise MissingResults(str(error)) from None
    source = Provenance("swe-smith", (grading.log,))
    rule = "graded by SWE-smith's own get_eval_report"
    status = report.get("tests_status") if isinstance(report, dict) else None
    if not isinstance(status, dict):
        note = f"{rule}: no test results it accepts (the tests did not run to their end marker)"
        return diagnose([], source=source, log=log, exit_code=exit_code, reward=0.0, notes=[note])
    judged = {
        outcome: {
            name for kind in ("FAIL_TO_PASS", "PASS_TO_PASS") for name in status[kind][outcome]
        }
        for outcome in ("success", "failure")
    }
    named = [*grading.instance["FAIL_TO_PASS"], *grading.instance["PASS_TO_PASS"]]
    tests = [_result(name, judged) for name in dict.fromkeys(named)]
    return diagnose(
        tests,
        source=source,
        log=log,
        exit_code=exit_code,
        reward=1.0 if report.get("resolved") is True else 0.0,
        notes=[rule],
    )


def _result(name: str, judged: dict[str, set[str]]) -> TestResult:
    """One listed test as the report judged it."""
    if name in judged["failure"]:
        return TestResult(name, "failed", "failed or not in the log")
    if name in judged["success"]:
        return TestResult(name, "passed")
    return TestResult(name, "skipped", "the report counts it neither way")
