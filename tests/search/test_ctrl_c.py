"""Ctrl-C on `sprout run`, sent as a terminal sends it: SIGINT to the whole process group.

The first one lets running turns finish, prints the table so far and exits 130;
the second one stops at once. Either way `--resume` ends with the run an
uninterrupted one makes, and no attempt is recorded as an error or a failure
because of the interruption.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import require_host_image
from tests.search.test_run_cli import _decisions
from tests.taskfolders import two_edits_task

MODEL = "oracle-noise:p=0.4,seed=5"


def _command(tmp_path: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "sprout.cli",
        "run",
        str(tmp_path / "tasks"),
        "--model",
        MODEL,
        "--method",
        "pass@2,sprout",
        "--workers",
        "1",  # attempt ids, and so parents, in one order: runs compare row by row
        "--out",
        str(out),
    ]


def _turns(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as connection:
            return connection.execute("SELECT count(*) FROM turns").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is still being made
        return 0


def _start_and_wait_for_turns(command: list[str], db: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, which the test signals as a tty would
    )
    deadline = time.monotonic() + 60
    while _turns(db) < 2:
        if time.monotonic() > deadline or process.poll() is not None:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail("the run ended or stalled before its second turn")
        time.sleep(0.05)
    return process


@pytest.fixture
def straight(tmp_path: Path) -> Path:
    require_host_image()
    two_edits_task(tmp_path / "tasks", slow_step=0.3)
    out = tmp_path / "straight"
    done = subprocess.run(_command(tmp_path, out), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.slow
def test_the_first_ctrl_c_finishes_running_turns_prints_the_table_and_exits_130(
    tmp_path: Path, straight: Path
) -> None:
    out = tmp_path / "interrupted"
    process = _start_and_wait_for_turns(_command(tmp_path, out), out / "sprout.db")
    os.killpg(process.pid, signal.SIGINT)
    try:
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert "Ctrl-C again to stop at once" in stderr and "--resume" in stderr
    assert "method" in stdout and "resolved" in stdout, "the table so far is printed"
    with sqlite3.connect(out / "sprout.db") as connection:
        statuses = {row[0] for row in connection.execute("SELECT status FROM attempts")}
    assert "error" not in statuses, "the interruption is not recorded as anyone's error"

    resumed = subprocess.run(
        [*_command(tmp_path, out), "--resume"], capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert _decisions(out) == _decisions(straight)


@pytest.mark.slow
def test_a_second_ctrl_c_stops_at_once_and_resume_still_finishes_the_run(
    tmp_path: Path, straight: Path
) -> None:
    out = tmp_path / "aborted"
    process = _start_and_wait_for_turns(_command(tmp_path, out), out / "sprout.db")
    os.killpg(process.pid, signal.SIGINT)
    time.sleep(0.2)
    started = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr
    assert time.monotonic() - started < 5, "the second Ctrl-C does not wait for turns"
    assert "Traceback" not in stderr

    resumed = subprocess.run(
        [*_command(tmp_path, out), "--resume"], capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert _decisions(out) == _decisions(straight)
