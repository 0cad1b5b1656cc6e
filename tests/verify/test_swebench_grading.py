"""SWE-bench logs graded as the `swebench` package's own harness grades them: Django's and
SymPy's runners, pytest's summary, and the verdict compared with `get_eval_report` on the
same log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sprout.task import SweBenchGrading
from sprout.verify.swebench_grading import grade, harness_spec

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"

DJANGO_LOG = """+ ./tests/runtests.py --verbosity 2 admin_views.tests
{start}
test_add (admin_views.tests.AdminViewTests) ... ok
test_change (admin_views.tests.AdminViewTests) ... ok
test_delete (admin_views.tests.AdminViewTests) ... {delete}
test_legacy (admin_views.tests.AdminViewTests) ... skipped 'needs sqlite 3.9'
----------------------------------------------------------------------
Ran 4 tests in 0.120s
{end}
>>>>> Test Exit Code: {code}
"""

SYMPY_LOG = """+ bin/test -C --verbose sympy/core/tests/test_basic.py
{start}
============================= test process starts ==============================
sympy/core/tests/test_basic.py[3]
test_structure ok
test_equality ok
test_subs {subs}
================== tests finished: 2 passed, 1 failed, in 0.10 seconds =========
{end}
>>>>> Test Exit Code: {code}
"""


def case(template: str, fixed: bool, failing: str, **fields: Any) -> tuple[str, SweBenchGrading]:
    """A log of `template` (its one changing test `failing` until `fixed`), and its grading."""
    outcome = {"delete": "ok" if fixed else "FAIL", "subs": "ok" if fixed else "F"}
    log = template.format(start=START, end=END, code=0 if fixed else 1, **outcome)
    return log, SweBenchGrading(**fields, fail_to_pass=(failing,))


def django(fixed: bool) -> tuple[str, SweBenchGrading]:
    tests = "(admin_views.tests.AdminViewTests)"
    return case(
        DJANGO_LOG,
        fixed,
        f"test_delete {tests}",
        instance_id="django__django-11099",
        repo="django/django",
        version="3.0",
        log_parser="parse_log_django",
        pass_to_pass=(f"test_add {tests}", f"test_change {tests}"),
    )


def sympy(fixed: bool) -> tuple[str, SweBenchGrading]:
    return case(
        SYMPY_LOG,
        fixed,
        "test_subs",
        instance_id="sympy__sympy-20590",
        repo="sympy/sympy",
        version="1.7",
        log_parser="parse_log_sympy",
        pass_to_pass=("test_structure", "test_equality"),
    )


def package_resolved(log: str, grading: SweBenchGrading, tmp_path: Path) -> bool:
    """The package's own verdict on `log` (`run_evaluation`'s report of one instance)."""
    from swebench.harness.grading import get_eval_report

    path = tmp_path / "test_output.txt"
    path.write_text(log)
    prediction = {"instance_id": grading.instance_id, "model_patch": "diff", "model_name": "m"}
    report = get_eval_report(harness_spec(grading), prediction, str(path), True)
    return bool(report[grading.instance_id]["resolved"])


@pytest.mark.parametrize("runner", [django, sympy])
@pytest.mark.parametrize("fixed", [True, False])
def test_the_verdict_is_the_packages_own(runner, fixed: bool, tmp_path: Path) -> None:
    log, grading = runner(fixed)
    diagnostics = grade(log, grading, exit_code=0)
    assert diagnostics.reward == (1.0 if fixed else 0.0)
    assert (diagnostics.reward == 1.0) == package_resolved(log, grading, tmp_path)
    assert diagnostics.provenance.kind == "swebench"
    assert f"graded by swebench 5.0.2 {grading.log_parser}" in diagnostics.summary


def test_the_diagnostics_name_the_failing_test_of_the_parse() -> None:
    log, grading = django(fixed=False)
    diagnostics = grade(log, grading, exit_code=0)
    outcomes = {test.name: test.outcome for test in diagnostics.tests}
    assert outcomes == {
        "test_delete (admin_views.tests.AdminViewTests)": "failed",
        "test_add (admin_views.tests.AdminViewTests)": "passed",
        "test_change (admin_views.tests.AdminViewTests)": "passed",
    }
    assert "2 of 3 tests passed" in diagnostics.summary
    assert "test_delete (admin_views.tests.AdminViewTests)" in diagnostics.summary


def test_a_log_whose_exit_code_contradicts_its_passes_is_not_resolved(tmp_path: Path) -> None:
    """A patch that prints its own PASSED lines is caught as the harness catches it."""
    log, grading = django(fixed=True)
    lying = log.replace("Test Exit Code: 0", "Test Exit Code: 1")
    assert grade(lying, grading, exit_code=0).reward == 0.0
    assert not package_resolved(lying, grading, tmp_path)


def test_a_log_without_the_harness_markers_is_no_result_and_says_why() -> None:
    log, grading = sympy(fixed=True)
    diagnostics = grade(log.replace(START, "").replace(END, ""), grading, exit_code=0)
    assert diagnostics.reward == 0.0
    assert "no test results the harness accepts" in diagnostics.summary


def test_a_skipped_fail_to_pass_test_does_not_resolve(tmp_path: Path) -> None:
    log, grading = django(fixed=True)
    skipped = grading.model_copy(
        update={"fail_to_pass": ("test_legacy (admin_views.tests.AdminViewTests)",)}
    )
    assert grade(log, skipped, exit_code=0).reward == 0.0
    assert not package_resolved(log, skipped, tmp_path)
