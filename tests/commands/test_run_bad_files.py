"""`sprout run` next to a task with bad files: the bad one is one line, the others run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.cli import main
from tests.support.requirements import require_host_image
from tests.support.swebench_records import swebench_with_a_pipe_in_its_clone
from tests.support.taskfolders import calc_task


def run(*paths: Path, out: Path, extra: tuple[str, ...] = ()) -> int:
    arguments = ["--model", "oracle", "--method", "pass@1", "--out", str(out), *extra]
    return main(["run", *map(str, paths), *arguments])


@pytest.mark.sandbox
def test_a_task_that_cannot_be_read_is_skipped_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    calc_task(tasks, "good")
    bad = calc_task(tasks, "bad")
    (bad / "instruction.md").write_bytes(b"Fix \xff it\n")
    out = tmp_path / "run"
    assert run(tasks, out=out) == 2
    printed, errors = capsys.readouterr()
    assert "Traceback" not in errors
    assert (
        f"sprout run: skipped: bad: {bad / 'instruction.md'}: not UTF-8 (column 5: byte 0xff)"
        in errors
    )
    assert "pass@1" in printed, "the table is printed"
    content = json.loads((out / "results.json").read_text())
    assert content["tasks"]["good"]["pass@1"]["resolved"] is True


@pytest.mark.sandbox
def test_a_task_that_cannot_be_set_up_is_an_error_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    good = calc_task(tmp_path / "tasks", "good")
    swebench, repos = swebench_with_a_pipe_in_its_clone(tmp_path)
    out = tmp_path / "run"
    assert run(good, swebench, out=out, extra=("--repos", str(repos))) == 1
    assert "Traceback" not in capsys.readouterr().err
    content = json.loads((out / "results.json").read_text())
    assert content["tasks"]["good"]["pass@1"]["resolved"] is True
    error = content["tasks"]["acme__calc-1"]["pass@1"]["error"]
    assert ".git/pipe is a named pipe" in error
