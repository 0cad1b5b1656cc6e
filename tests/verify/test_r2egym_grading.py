"""R2E-Gym's reward on pytest logs: resolved only when every test's status is exactly the
row's expected one (tests expected to fail included); a log with no pytest summary is no
verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sprout.task import R2EGymGrading
from sprout.verify.r2egym_grading import grade, normalized, parse_statuses
from sprout.verify.types import MissingResults

TESTS = """from calc import add


def test_add():
    assert add(2, 3) == 5


def test_zero():
    assert add(0, 0) == 0


def test_not_yet():
    assert add(2, 2) == 5


class TestSum:
    def test_right_zero(self):
        assert add(3, 0) == 3
"""
EXPECTED = {
    "test_add": "PASSED",
    "test_zero": "PASSED",
    "test_not_yet": "FAILED",
    "TestSum.test_right_zero": "PASSED",
}
GRADING = R2EGymGrading(expected=EXPECTED)


def pytest_log(folder: Path, add: str) -> str:
    """What run_tests.sh prints: pytest -rA over r2e_tests/ in the repository, `add` as
    the body of calc.add."""
    (folder / "r2e_tests").mkdir(parents=True, exist_ok=True)
    (folder / "r2e_tests/test_1.py").write_text(TESTS)
    (folder / "calc.py").write_text(f"def add(a, b):\n    return {add}\n")
    run = subprocess.run(
        [sys.executable, "-B", "-m", "pytest", "-rA", "-p", "no:cacheprovider", "r2e_tests"],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    return run.stdout + run.stderr


@pytest.mark.parametrize(
    ("add", "resolved", "named"),
    [
        ("a + b", True, None),
        ("a - b", False, "test_add (expected PASSED, got FAILED)"),
        # a test expected to fail that passes is no resolution
        ("5 if (a, b) == (2, 2) else a + b", False, "test_not_yet (expected FAILED, got PASSED)"),
        # all but one
        ("a + b if a else 1", False, "test_zero (expected PASSED, got FAILED)"),
    ],
)
def test_a_real_pytest_log_is_resolved_only_when_every_status_is_the_expected_one(
    tmp_path: Path, add: str, resolved: bool, named: str | None
) -> None:
    log = pytest_log(tmp_path, add)
    diagnostics = grade(log, GRADING, exit_code=0 if resolved else 1)
    assert diagnostics.reward == float(resolved), diagnostics.summary
    assert diagnostics.provenance.kind == "r2egym"
    if named is None:
        assert diagnostics.passed == 4 and diagnostics.failed == 0
        assert diagnostics.summary.startswith("4 of 4 tests passed")
    else:
        assert diagnostics.passed == 3 and diagnostics.failed == 1
        assert f"failed: {named}" in diagnostics.summary


def test_the_parser_reads_the_summary_as_r2egym_does() -> None:
    log = (
        "r2e_tests/test_1.py ..F\n"
        "=== short test summary info ===\n"
        "PASSED r2e_tests/test_1.py::test_a\n"
        "PASSED r2e_tests/test_1.py::TestK::test_b[1-2]\n"
        "FAILED r2e_tests/test_1.py::test_c - AssertionError: assert 1 == 2\n"
        "FAILED r2e_tests/test_1.py::test_d - message that says PASSED\n"
        "ERROR r2e_tests/test_2.py - ImportError: no module\n"
        "XFAIL r2e_tests/test_1.py::test_e - reason\n"
        "SKIPPED [1] r2e_tests/test_1.py:9: skipped\n"
        "=== 2 failed, 2 passed in 0.1s ===\n"
    )
    assert parse_statuses(log) == {
        "test_a": "PASSED",
        "TestK.test_b[1-2]": "PASSED",
        "test_c": "FAILED",
        "test_d - message that says PASSED": "PASSED",  # PASSED is looked for first
        "": "ERROR",  # a file that did not import: no test id
    }
    assert parse_statuses("collected 0 items\n") is None


def test_keys_lose_colour_codes_and_what_follows_a_dash() -> None:
    assert normalized({"\x1b[1mtest_a\x1b[0m": "PASSED", "test_b - why": "FAILED"}) == {
        "test_a": "PASSED",
        "test_b": "FAILED",
    }
    coloured = (
        "\x1b[32m=== short test summary info ===\x1b[0m\r\n"
        "\x1b[32mPASSED\x1b[0m r2e_tests/test_1.py::\x1b[1mtest_add\x1b[0m\r\n"
        "FAILED r2e_tests/test_1.py::test_not_yet - assert 4 == 5\n"
    )
    grading = R2EGymGrading(expected={"test_add": "PASSED", "test_not_yet - x": "FAILED"})
    assert grade(coloured, grading, exit_code=1).reward == 1.0


def test_a_test_missing_from_the_log_or_one_not_expected_is_no_resolution() -> None:
    summary = "=== short test summary info ===\n"
    fewer = summary + "PASSED r2e_tests/test_1.py::test_add\n"
    more = fewer + "PASSED r2e_tests/test_1.py::test_other\n"
    grading = R2EGymGrading(expected={"test_add": "PASSED", "test_b": "FAILED"})
    missing = grade(fewer, grading, exit_code=0)
    assert missing.reward == 0.0 and "test_b (expected FAILED, not in the log)" in missing.summary
    extra = grade(more, R2EGymGrading(expected={"test_add": "PASSED"}), exit_code=0)
    assert extra.reward == 0.0 and "test_other (PASSED, and not among" in extra.summary
    broken = grade(summary + "ERROR r2e_tests/test_1.py - SyntaxError\n", grading, exit_code=2)
    assert broken.reward == 0.0 and "<no test id> (ERROR, and not among" in broken.summary


def test_a_log_with_no_summary_is_no_verdict_and_a_timeout_scores_0() -> None:
    with pytest.raises(MissingResults, match=r"task t-1: run_tests\.sh's output has no pytest"):
        grade("bash: /root/run_tests.sh: No such file or directory\n", GRADING, 127, "t-1")
    timed_out = grade("collected 4 items\nr2e_tests/test_1.py ..", GRADING, exit_code=124)
    assert timed_out.reward == 0.0 and "ran past R2E-Gym's limit" in timed_out.summary
    killed = grade("collected 4 items\n", GRADING, exit_code=None)
    assert killed.reward == 0.0 and "timed out" in killed.summary
