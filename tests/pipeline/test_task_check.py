"""check_task on real sandboxes: a sound task, and each way a task can be broken."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sprout.commands.check_table import (
    outcome,
    record_of,
    table_header,
    table_row,
    warning_lines,
)
from sprout.pipeline.task_check import (
    OWNER_FILE,
    SCRATCH_PREFIX,
    CheckResult,
    check_task,
    load_failure,
    one_line,
    remove_abandoned,
    scratch_run_folder,
    this_process,
    verifier_crash,
)
from sprout.runfolder import RunFolder
from sprout.sandbox.jail.processes import process_start
from sprout.tasks import load_native
from sprout.verify import diagnose
from sprout.verify.types import TestResult
from tests.support.requirements import require_host_image
from tests.support.taskfolders import CALC_SOLVE, FIXED, calc_task
from tests.support.verifier_logs import UV_NO_PYTHON


@pytest.fixture
def run(tmp_path: Path) -> Iterator[RunFolder]:
    require_host_image()
    folder = RunFolder.create(tmp_path / "run")
    yield folder
    folder.close()


@pytest.mark.sandbox
def test_a_sound_task_fails_untouched_and_passes_with_the_oracle(run, tmp_path):
    result = check_task(load_native(calc_task(tmp_path, "calc")), run)
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
    result = check_task(load_native(calc_task(tmp_path, "fixed", code=FIXED)), run)
    assert result.problem == "untouched environment already passes (2 of 2 tests passed)"
    assert result.oracle is not None and result.oracle.reward == 1


@pytest.mark.sandbox
def test_an_oracle_that_fails_is_broken_with_the_failing_test(run, tmp_path):
    solve = CALC_SOLVE.replace("s/a - b/a + b/", "s/a - b/a + b + 1/")
    result = check_task(load_native(calc_task(tmp_path, "off", solve=solve)), run)
    assert result.problem == "oracle fails add: add(2, 3) != 5"
    assert result.untouched is not None and result.untouched.reward == 0


@pytest.mark.sandbox
def test_a_failing_step_is_named_first(run, tmp_path):
    solve = CALC_SOLVE.replace("calc.py\n# wrong", "calcs.py\n# wrong")
    result = check_task(load_native(calc_task(tmp_path, "typo", solve=solve)), run)
    assert result.problem is not None
    assert result.problem.startswith("step 2/2 exited 2 (sed: can't read calcs.py")
    assert result.problem.endswith("oracle fails add: add(2, 3) != 5")


@pytest.mark.sandbox
def test_a_task_without_a_solution_is_broken(run, tmp_path):
    result = check_task(load_native(calc_task(tmp_path, "bare", solve=None)), run)
    assert result.problem is not None and result.problem.startswith("no reference solution")
    assert result.untouched is not None and result.oracle is None


@pytest.mark.sandbox
def test_a_set_up_that_fails_is_broken(run, tmp_path):
    task = calc_task(tmp_path, "setup", toml='setup = ["false"]\n')
    result = check_task(load_native(task), run)
    assert result.problem is not None
    assert result.problem.startswith(
        "set-up step 2 at task.toml sprout.setup[0] ('false') failed with exit code 1"
    )


@pytest.mark.sandbox
def test_a_failed_set_up_step_shows_its_command_and_last_lines(run, tmp_path):
    step = "for i in $(seq 1 30); do echo line $i; done; echo fatal: no such ref >&2; exit 3"
    task = calc_task(tmp_path, "setup", toml=f"setup = [{json.dumps(step)}]\n")
    result = check_task(load_native(task), run)
    assert result.problem is not None and result.problem.endswith("fatal: no such ref")
    lines = result.detail.splitlines()
    assert lines[0] == f"$ {step}" and lines[-1] == "fatal: no such ref"
    assert len(lines) == 21 and lines[1] == "line 12", "the last 20 lines, unabridged"


@pytest.mark.sandbox
def test_a_set_up_step_that_found_no_network_says_so_first(run, tmp_path):
    """A Dockerfile that pipes an installer from the internet fails later, at a step that
    blames something else (apt cannot find the package the installer would have added):
    the problem leads with the request that found no network."""
    step = (
        "echo 'curl: (6) Could not resolve host: deb.nodesource.example' >&2; "
        "echo 'E: Unable to locate package nodejs' >&2; exit 100"
    )
    task = calc_task(tmp_path, "setup", toml=f"setup = [{json.dumps(step)}]\n")
    result = check_task(load_native(task), run)
    assert result.problem is not None
    assert result.problem.startswith(
        "needs the internet (deb.nodesource.example): curl: (6) Could not resolve host: "
        "deb.nodesource.example; set-up step 2 at task.toml sprout.setup[0]"
    )


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
    row = table_row(record_of(CheckResult("calc", seconds=1.25, problem="broken: x")), 8)
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
    assert warning_lines([record_of(result) for result in results]) == [
        "no root filesystem for 'py' (a, b)",
        "step 2/3 exited 1 (oops) (c)",
    ]


UV_NO_INDEX = """\
  \u00d7 Failed to fetch: `https://pypi.org/simple/pytest/`
  ├─▶ Request failed after 3 retries
  ├─▶ error sending request for url (https://pypi.org/simple/pytest/)
  ├─▶ client error (Connect)
  ├─▶ dns error
  ╰─▶ failed to lookup address information: Temporary failure in name resolution
"""


def test_uv_without_a_network_is_a_crash_that_names_the_host():
    # Terminal-Bench 2's scripts write reward 0 when uvx fails: no test ran, so no report.
    crashed = diagnose([], source="reward:/logs/verifier/reward.txt", log=UV_NO_PYTHON, reward=0)
    reason = verifier_crash(crashed)
    assert reason is not None and len(reason) < 240
    assert reason.startswith(
        "needs the internet (github.com): uv downloads Python 3.12.12, which the image lacks: "
        "Failed to download https://github.com/astral-sh/python-build-standalone/"
    )
    no_index = diagnose([], source="exit-code", log=UV_NO_INDEX, exit_code=2)
    assert verifier_crash(no_index) == (
        "needs the internet (pypi.org): Failed to fetch: `https://pypi.org/simple/pytest/`"
    )


def test_a_reward_file_is_still_a_report_unless_the_network_was_missing():
    passing = diagnose([], source="reward:/logs/verifier/reward.txt", log=UV_NO_INDEX, reward=1)
    assert verifier_crash(passing) is None
    missing = "bash: line 5: uvx: command not found\n"
    failing = diagnose([], source="reward:/logs/verifier/reward.txt", log=missing, reward=0)
    assert verifier_crash(failing) is None
    ran = diagnose(
        [TestResult("a", "failed")], source="ctrf:/logs/verifier/ctrf.json", log=UV_NO_PYTHON
    )
    assert verifier_crash(ran) is None


# --- temporary run folders: removed at the end, and at the next start once their check died --


def leftover(parent: Path, name: str, **owner: object) -> Path:
    """A `sprout-check-*` folder with a run in it, made by the process `owner` describes
    (this process, with the fields given replaced)."""
    folder = parent / f"{SCRATCH_PREFIX}{name}"
    (folder / "run" / "layers").mkdir(parents=True)
    (folder / "run" / "sprout.db").write_text("")
    (folder / OWNER_FILE).write_text(json.dumps({**this_process(), **owner}))
    return folder


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_only_folders_of_checks_that_are_gone_are_removed(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        mine = leftover(tmp_path, "mine")
        alive = leftover(tmp_path, "alive", pid=sleeper.pid, start=process_start(sleeper.pid))
        dead = leftover(tmp_path, "dead", pid=dead_pid())
        reused = leftover(tmp_path, "reused", pid=sleeper.pid, start="1")  # pid since reused
        rebooted = leftover(tmp_path, "rebooted", pid=sleeper.pid, boot="an-earlier-boot")
        elsewhere = leftover(tmp_path, "elsewhere", pid=dead_pid(), host="another-machine")
        contained = leftover(tmp_path, "contained", pid=dead_pid(), pid_namespace="pid:[1]")
        unowned = tmp_path / f"{SCRATCH_PREFIX}being-made"
        unowned.mkdir()
        broken = leftover(tmp_path, "broken")
        (broken / OWNER_FILE).write_text("{")
        other_user = leftover(tmp_path, "other-user", pid=dead_pid())
        os.chown(other_user, 54321, 54321)
        not_ours = tmp_path / "sprout-checkpoint-notes"
        not_ours.mkdir()

        removed = remove_abandoned(tmp_path)

        assert sorted(removed) == sorted([dead, reused, rebooted])
        for kept in (mine, alive, elsewhere, contained, unowned, broken, other_user, not_ours):
            assert kept.is_dir(), kept
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_scratch_folder_goes_however_its_block_ends(tmp_path: Path) -> None:
    dead = leftover(tmp_path, "dead", pid=dead_pid())
    with scratch_run_folder(tmp_path) as run:
        assert not dead.exists(), "leftovers of dead checks go first"
        folder = run.parent
        owner = json.loads((folder / OWNER_FILE).read_text())
        assert owner["pid"] == os.getpid() and owner["start"] == process_start(os.getpid())
        assert sorted(p.name for p in folder.iterdir()) == [OWNER_FILE]
        run.mkdir()
        (run / "made-by-the-check").write_text("x")
    assert not folder.exists()
    with pytest.raises(KeyboardInterrupt), scratch_run_folder(tmp_path) as run:
        run.mkdir()
        raise KeyboardInterrupt
    assert not run.parent.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.sandbox
def test_a_fault_no_one_foresaw_is_still_one_tasks_line(
    run, tmp_path, monkeypatch: pytest.MonkeyPatch
):
    def broken(*_args: object) -> str:
        raise KeyError("a bug in sprout")

    monkeypatch.setattr("sprout.pipeline.task_check.base_checkpoint_of", broken)
    result = check_task(load_native(calc_task(tmp_path, "calc")), run)
    assert result.problem == "sprout failed on this task: KeyError: 'a bug in sprout'"
    assert "Traceback" in result.detail and "KeyError" in result.detail


def test_a_problem_with_undecodable_bytes_prints():
    assert one_line("calc: /tasks/caf\udce9/x: missing") == "calc: /tasks/caf\\udce9/x: missing"
    assert load_failure("caf\udce9: missing").task_id == "caf\\udce9"


@pytest.mark.sandbox
def test_a_scratch_run_folder_takes_its_layers_on_the_store_filesystem_with_it(
    tmp_path: Path,
) -> None:
    from sprout.sandbox.storefs import btrfs
    from sprout.sandbox.storefs import owners as store_owners

    require_host_image()
    with scratch_run_folder(tmp_path) as run:
        RunFolder.create(run).close()
        if not (run / "layers").is_symlink():
            pytest.skip("the suite runs without the store filesystem here (see its header)")
        target = os.path.realpath(run / "layers")
        assert os.path.isdir(target)
    assert not os.path.exists(target) and not os.path.exists(f"{target}.owner")
    assert str(run / "layers") not in [
        orphan.owner for orphan in store_owners.orphan_stores(btrfs.store_fs_root())
    ]
