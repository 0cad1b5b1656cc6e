"""check_task on real sandboxes: a sound task, and each way a task can be broken."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sprout.runfolder import RunFolder
from sprout.taskcheck import (
    CheckResult,
    check_task,
    load_failure,
    one_line,
    outcome,
    table_header,
    table_row,
    warning_lines,
)
from sprout.tasks import load_native
from sprout.verify import diagnose
from sprout.verify.types import TestResult
from tests.conftest import require_host_image
from tests.taskcheck_helpers import FIXED, SOLVE, write_task


@pytest.fixture
def run(tmp_path: Path) -> Iterator[RunFolder]:
    require_host_image()
    folder = RunFolder.create(tmp_path / "run")
    yield folder
    folder.close()


@pytest.mark.sandbox
def test_a_sound_task_fails_untouched_and_passes_with_the_oracle(run, tmp_path):
    result = check_task(load_native(write_task(tmp_path, "calc")), run)
    assert result.ok, result.problem
    assert result.untouched is not None and result.untouched.reward == 0
    assert (result.untouched.passed, result.untouched.failed) == (1, 1)
    assert result.oracle is not None and result.oracle.reward == 1
    assert result.seconds >= (result.oracle_seconds or 0) > 0
    attempt = run.tree.attempt(result.attempt_id)
    assert (attempt.status, attempt.reward, attempt.method) == ("submitted", 1.0, "oracle")
    assert "+    return a + b" in attempt.patch
    commands = [turn.calls[0].command for turn in run.tree.own_turns(attempt)]
    assert commands[1] == "set -e\ncd /app\nsed -i 's/a - b/a + b/' calc.py"


@pytest.mark.sandbox
def test_an_untouched_environment_that_passes_is_broken(run, tmp_path):
    result = check_task(load_native(write_task(tmp_path, "fixed", code=FIXED)), run)
    assert result.problem == "untouched environment already passes (2 of 2 tests passed)"
    assert result.oracle is not None and result.oracle.reward == 1


@pytest.mark.sandbox
def test_an_oracle_that_fails_is_broken_with_the_failing_test(run, tmp_path):
    solve = SOLVE.replace("s/a - b/a + b/", "s/a - b/a + b + 1/")
    result = check_task(load_native(write_task(tmp_path, "off", solve=solve)), run)
    assert result.problem == "oracle fails add: add(2, 3) != 5"
    assert result.untouched is not None and result.untouched.reward == 0


@pytest.mark.sandbox
def test_a_failing_step_is_named_first(run, tmp_path):
    solve = SOLVE.replace("calc.py\n# wrong", "calcs.py\n# wrong")
    result = check_task(load_native(write_task(tmp_path, "typo", solve=solve)), run)
    assert result.problem is not None
    assert result.problem.startswith("step 2/2 exited 2 (sed: can't read calcs.py")
    assert result.problem.endswith("oracle fails add: add(2, 3) != 5")


@pytest.mark.sandbox
def test_a_task_without_a_solution_is_broken(run, tmp_path):
    result = check_task(load_native(write_task(tmp_path, "bare", solve=None)), run)
    assert result.problem is not None and result.problem.startswith("no reference solution")
    assert result.untouched is not None and result.oracle is None


@pytest.mark.sandbox
def test_a_set_up_that_fails_is_broken(run, tmp_path):
    task = write_task(tmp_path, "setup", toml='setup = ["false"]\n')
    result = check_task(load_native(task), run)
    assert result.problem is not None
    assert result.problem.startswith("set-up step 2 ('false') failed with exit code 1")


def test_a_load_failure_is_a_broken_row():
    line = "calc: /t/calc/task.toml: sprout.network: Input should be a valid boolean"
    assert load_failure(line) == CheckResult(
        "calc", problem="/t/calc/task.toml: sprout.network: Input should be a valid boolean"
    )


def test_verdict_cells_shout_what_a_sound_task_would_not_do():
    failing = diagnose([TestResult("a", "passed"), TestResult("b", "failed")], source="tap")
    passing = diagnose([TestResult("a", "passed")], source="tap")
    assert outcome(failing, expected=0) == "fail (1 of 2 tests)"
    assert outcome(passing, expected=0) == "PASS (1 of 1 tests)"
    assert outcome(failing, expected=1) == "FAIL (1 of 2 tests)"
    assert outcome(None, expected=1) == "-"


def test_rows_line_up_under_the_header():
    header = table_header(8)
    row = table_row(CheckResult("calc", seconds=1.25, problem="broken: x"), 8)
    assert header.index("seconds") + len("seconds") == row.index("1.2") + len("1.2")
    assert row.endswith("broken: x") and header.endswith("problem")


def test_one_line_flattens_and_cuts():
    assert one_line("a\n  b\tc") == "a b c"
    assert one_line("x" * 300, cap=10) == "xxxxxxx..."


def test_warnings_that_differ_only_in_their_file_are_one_line():
    results = [
        CheckResult("a", warnings=("/t/a/Dockerfile:1: no root filesystem for 'py'",)),
        CheckResult("b", warnings=("/t/b/Dockerfile:1: no root filesystem for 'py'",)),
        CheckResult("c", warnings=("step 2/3 exited 1 (oops)",)),
    ]
    assert warning_lines(results) == [
        "no root filesystem for 'py' (a, b)",
        "step 2/3 exited 1 (oops) (c)",
    ]
