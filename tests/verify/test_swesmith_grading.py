"""SWE-smith's own grader on a log, run in the interpreter with the swesmith package: the
traced markers it needs, its report's verdict; a grader that cannot run is no verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.task import SweSmithGrading
from sprout.verify import MissingResults
from sprout.verify.swesmith_grading import grade
from tests.support.swesmith_rows import F2P, INSTANCE, MIRROR, P2P, swesmith_python

INSTANCE_FIELDS = {
    "instance_id": INSTANCE,
    "repo": MIRROR,
    "FAIL_TO_PASS": F2P,
    "PASS_TO_PASS": P2P,
    "patch": "diff --git a/calc.sh b/calc.sh\n",
}


def traced(*lines: str) -> str:
    """A log as `bash -x` prints the eval script's markers around the tests' lines."""
    body = "\n".join(lines)
    return f"+ : '>>>>> Start Test Output'\n{body}\n+ : '>>>>> End Test Output'\n"


def test_the_publishers_report_decides() -> None:
    grading = SweSmithGrading(python=swesmith_python(), instance=INSTANCE_FIELDS)
    passing = [f"{name} PASSED" for name in (*F2P, *P2P)]
    assert grade(traced(*passing), grading, 0, INSTANCE).reward == 1.0
    one_failing = [*passing[:1], f"{F2P[1]} FAILED", *passing[2:]]
    verdict = grade(traced(*one_failing), grading, 1, INSTANCE)
    assert verdict.reward == 0.0
    assert [(t.name, t.outcome) for t in verdict.tests] == [
        (F2P[0], "passed"),
        (F2P[1], "failed"),
        (P2P[0], "passed"),
    ]


def test_a_log_without_the_markers_has_no_results_and_scores_0() -> None:
    grading = SweSmithGrading(python=swesmith_python(), instance=INSTANCE_FIELDS)
    verdict = grade("\n".join(f"{name} PASSED" for name in F2P), grading, 0, INSTANCE)
    assert verdict.reward == 0.0 and verdict.tests == ()
    assert "no test results it accepts" in verdict.summary


def test_a_grader_that_cannot_run_is_no_verdict(tmp_path: Path) -> None:
    grading = SweSmithGrading(python=str(tmp_path / "python"), instance=INSTANCE_FIELDS)
    with pytest.raises(MissingResults, match=r"--swe-smith .*/python: cannot be run"):
        grade(traced(), grading, 0, INSTANCE)
