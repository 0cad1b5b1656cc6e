"""One rule for a task's files' digest: names, kinds, modes, bytes and link targets count;
times and owners do not; the base layer counts only what its copies take."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sprout.tasks import load_native
from sprout.tasks.digest import folder_digest
from sprout.tasks.setup.base_name import context_inputs
from sprout.tasks.setup.inputs import gather_inputs
from tests.support.taskfolders import calc_task


def a_folder(root: Path) -> Path:
    """A solution-like folder: an executable, a file below, a link to it."""
    folder = root / "solution"
    (folder / "data").mkdir(parents=True)
    (folder / "solve.sh").write_text("echo hi\n")
    (folder / "data" / "x.txt").write_text("x\n")
    os.symlink("data/x.txt", folder / "latest")
    return folder


def relink(folder: Path) -> None:
    (folder / "latest").unlink()
    os.symlink("solve.sh", folder / "latest")


@pytest.mark.parametrize(
    "change",
    [
        lambda folder: (folder / "data" / "x.txt").write_text("y\n"),
        lambda folder: os.chmod(folder / "solve.sh", 0o755),
        relink,
        lambda folder: (folder / "empty").mkdir(),
        lambda folder: (folder / "data" / "x.txt").rename(folder / "data" / "z.txt"),
    ],
    ids=["content", "mode", "a link's target", "an empty folder", "a name"],
)
def test_what_a_copy_keeps_changes_the_digest(tmp_path: Path, change: Callable[[Path], Any]):
    folder = a_folder(tmp_path)
    before = folder_digest(folder, 12)
    change(folder)
    assert folder_digest(folder, 12) != before


def test_times_owners_and_the_folders_own_name_are_not_the_content(tmp_path: Path):
    folder = a_folder(tmp_path)
    before = folder_digest(folder, 12)
    os.utime(folder / "solve.sh", (0, 0))
    os.lchown(folder / "data" / "x.txt", 1234, 1234)
    assert folder_digest(folder.rename(tmp_path / "elsewhere"), 12) == before


def base_inputs(task_folder: Path) -> str:
    """The build-context part of the base layer's hash."""
    task = load_native(task_folder)
    inputs = gather_inputs(task)
    return hashlib.sha256(b"".join(context_inputs(task, inputs))).hexdigest()


def test_the_base_layer_counts_what_its_copies_take_modes_included(tmp_path: Path):
    task = calc_task(tmp_path, "calc")
    before = base_inputs(task)
    (task / "environment" / "notes.txt").write_text("not copied\n")
    assert base_inputs(task) == before, "a file no COPY takes leaves the base layer alone"
    os.chmod(task / "environment" / "calc.py", 0o755)
    assert base_inputs(task) != before, "COPY keeps the mode: a new one is a new base layer"
