"""`sprout tasks check` as a user runs it: the table, exit codes, load errors, --out."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import require_host_image
from tests.taskcheck_helpers import FIXED, SOLVE, write_task

from sprout.cli import main


def check(*args: str) -> int:
    return main(["tasks", "check", *args])


def rows(printed: str) -> dict[str, str]:
    """The table's rows by task id."""
    return {line.split()[0]: line for line in printed.splitlines()[1:] if line.strip()}


@pytest.mark.sandbox
def test_a_sound_task_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_host_image()
    assert check(str(write_task(tmp_path, "calc"))) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].split() == ["task", "untouched", "oracle", "seconds", "problem"]
    assert rows(printed)["calc"].split()[1:9] == [
        "fail",
        "(1",
        "of",
        "2",
        "tests)",
        "pass",
        "(2",
        "of",
    ]
    assert rows(printed)["calc"].endswith("  ok")
    assert "1 task: 1 ok, 0 broken" in printed


@pytest.mark.sandbox
def test_broken_tasks_exit_1_and_the_others_still_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    write_task(tasks, "good")
    write_task(tasks, "fixed", code=FIXED)
    write_task(tasks, "wrong", solve=SOLVE.replace("a + b/", "a + b + 1/"))
    write_task(tasks, "typo", toml="network = maybe\n")
    write_task(tasks, "bare", solve=None)
    assert check(str(tasks), "--workers", "2") == 1
    printed = capsys.readouterr().out
    assert "5 tasks: 1 ok, 4 broken" in printed
    found = rows(printed)
    assert found["good"].endswith("  ok")
    assert "PASS (2 of 2 tests)" in found["fixed"]
    assert found["fixed"].endswith("untouched environment already passes (2 of 2 tests passed)")
    assert "FAIL (1 of 2 tests)" in found["wrong"]
    assert found["wrong"].endswith("oracle fails add: add(2, 3) != 5")
    assert "task.toml" in found["typo"] and found["typo"].split()[1:3] == ["-", "-"]
    assert found["bare"].endswith("no reference solution (no steps for the oracle to play)")


@pytest.mark.sandbox
def test_a_verifier_that_crashes_is_no_report_and_its_cause_is_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    scripts = {
        "missing-runner": "echo fetching the runner\nuvx -p 3.13 -w pytest==8.4.1 pytest /tests\n",
        "offline": "echo 'curl: (6) Could not resolve host: astral.sh' >&2\nexit 6\n",
    }
    for name, script in scripts.items():
        task = write_task(tasks, name)
        settings = task / "task.toml"
        settings.write_text(settings.read_text().replace('"tap"', '"auto"'))
        (task / "tests" / "test.sh").write_text(script)
    assert check(str(tasks)) == 1
    printed = capsys.readouterr().out
    found = rows(printed)
    assert found["missing-runner"].split()[1:3] == ["NO", "REPORT"]
    assert found["missing-runner"].endswith(
        "the verifier did not run on the untouched task: a command it runs is missing: "
        "uvx: not found"
    )
    assert "needs the internet (astral.sh): curl: (6) Could not resolve host" in found["offline"]
    details = printed[printed.index("--- missing-runner") :]
    assert "    fetching the runner" in details and "uvx: command not found" in details


@pytest.mark.sandbox
def test_out_keeps_the_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_host_image()
    out = tmp_path / "kept"
    assert check(str(write_task(tmp_path, "calc")), "--out", str(out)) == 0
    assert (out / "sprout.db").is_file() and (out / "layers").is_dir()
    assert f"run folder: {out}; oracle attempts: calc 1" in capsys.readouterr().out


def test_an_unknown_path_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(str(tmp_path / "nowhere")) == 2
    captured = capsys.readouterr()
    assert captured.err == f"sprout tasks check: {tmp_path / 'nowhere'}: no such file or folder\n"
    assert captured.out == ""


def test_workers_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(str(tmp_path), "--workers", "0") == 2
    assert capsys.readouterr().err == "sprout tasks check: --workers 0: expected at least 1\n"
