"""The task's `solution/` folder is at /solution for the oracle models, and for nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.cli import main
from tests.support.chat_server import what_a_model_sees
from tests.support.requirements import require_host_image
from tests.support.taskfolders import two_edits_task

pytestmark = pytest.mark.sandbox


def task_reading_solution_files(root: Path) -> Path:
    """The two-edit task whose solve.sh (no markers: one script) copies a file of solution/."""
    task = two_edits_task(root)
    (task / "solution" / "b.txt").write_text("2\n")
    (task / "solution" / "solve.sh").write_text(
        "#!/bin/bash\n# no step markers: this runs as one script\necho 1 > a.txt\n"
        "cp /solution/b.txt b.txt\necho SPROUT_SUBMIT\n"
    )
    return task


def test_the_oracle_plays_a_solution_that_reads_its_own_files(tmp_path: Path) -> None:
    require_host_image()
    task = task_reading_solution_files(tmp_path / "tasks")
    assert main(["tasks", "check", str(task)]) == 0


def test_another_model_never_sees_the_solution_folder(tmp_path: Path) -> None:
    require_host_image()
    task = task_reading_solution_files(tmp_path / "tasks")
    code, observation = what_a_model_sees(task, "ls -A /; ls /solution", tmp_path / "run")
    assert code == 0
    assert "ls: cannot access '/solution': No such file or directory" in observation
