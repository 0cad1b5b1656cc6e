"""SWE-smith rows as published, read with SWE-smith's own profiles (`--swe-smith PYTHON`):
the bug planted at checkpoint 0 in a history of its own, the FAIL_TO_PASS test files
withheld, the profile's test command, the gold patch reversed; bad rows are one line."""

from __future__ import annotations

from pathlib import Path

from sprout.task import Task
from sprout.tasks import load_tasks
from tests.support.swesmith_rows import (
    F2P,
    INSTANCE,
    P2P,
    smith_row,
    swesmith_python,
    write_rows,
)

MADE = {
    "patch": "diff --git a/calc.sh b/calc.sh\n--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n-x\n+y\n"
}


def test_a_published_row_becomes_a_task_by_its_profile(tmp_path: Path) -> None:
    python = swesmith_python()
    loaded = load_tasks([write_rows(tmp_path / "smith.jsonl", [smith_row(MADE)])], swe_smith=python)
    assert loaded.errors == []
    [task] = loaded.tasks
    assert isinstance(task, Task) and task.id == INSTANCE and task.workdir == "/testbed"
    assert task.image == "jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536:latest"
    bug, history = task.setup
    assert bug.command.startswith("git apply --verbose <<")
    assert history.command.startswith("rm -rf .git && git init -q && git add -A")
    assert "git rm -q --cached -- tests/test_ops.py" in history.command
    assert task.withheld == ("/testbed/tests/test_ops.py",)
    assert task.solution[0].command.startswith("git apply --verbose --reverse <<")
    script = task.test_files["eval.sh"]
    assert "git checkout -- tests/test_sub.py\n" in script
    assert (
        ": '>>>>> Start Test Output'\nsource /opt/miniconda3/bin/activate; conda activate "
        "testbed; pytest --disable-warnings --color=no --tb=no --verbose\n"
        ": '>>>>> End Test Output'\n"
    ) in script
    assert task.results == "swe-smith" and task.swesmith is not None
    assert task.swesmith.instance["FAIL_TO_PASS"] == F2P
    assert task.swesmith.instance["PASS_TO_PASS"] == P2P
    assert task.git_history is None  # the history is the one commit set-up makes


def test_without_swesmith_the_file_is_one_line(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "smith.jsonl", [smith_row(MADE)])
    [error] = load_tasks([path]).errors
    assert error == (
        f"{path}: SWE-smith's rows: pass --swe-smith PYTHON, a Python interpreter with the "
        "swesmith package (its profiles hold each repository's test command and parser)"
    )
    [error] = load_tasks([path], swe_smith=str(tmp_path / "python")).errors
    assert error.startswith(f"--swe-smith {tmp_path / 'python'}: cannot be run")


def test_bad_rows_are_one_line_each_and_the_others_still_load(tmp_path: Path) -> None:
    python = swesmith_python()
    rows = [
        smith_row(MADE, instance_id="nobody__x.0000abcd.bug1", repo="swesmith/nobody__x.0000abcd"),
        smith_row(MADE, instance_id=INSTANCE + "x", FAIL_TO_PASS=[]),
        smith_row(MADE),
    ]
    path = write_rows(tmp_path / "smith.jsonl", rows)
    loaded = load_tasks([path], swe_smith=python)
    assert [task.id for task in loaded.tasks] == [INSTANCE]
    assert loaded.errors[0].startswith(
        f"nobody__x.0000abcd.bug1: {path}:1: repo: SWE-smith's profile for "
        "swesmith/nobody__x.0000abcd: KeyError: "
    )
    assert loaded.errors[1] == (
        f"{INSTANCE}x: {path}:2: FAIL_TO_PASS: List should have at least 1 item after "
        "validation, not 0"
    )
