"""Ctrl-C on `sprout run`, sent as a terminal sends it: SIGINT to the whole process group.

The first one lets running turns finish, prints the table so far and exits 130;
the second one stops at once. Either way `--resume` ends with the run an
uninterrupted one makes, and no attempt is recorded as an error or a failure
because of the interruption.
"""

from __future__ import annotations

import os
import secrets
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import ProcessWatch
from tests.support.requirements import require_host_image
from tests.support.run_decisions import decisions
from tests.support.run_watch import count, hold_call, wait_for_rows, wait_until
from tests.support.taskfolders import two_edits_task

MODEL = "oracle-noise:p=0.4,seed=5"
TURNS = "SELECT count(*) FROM turns"


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


def _start(command: list[str], logs: Path) -> subprocess.Popen[str]:
    """The run in its own process group (which the test signals as a terminal would), its
    output in `logs`.out and `logs`.err."""
    with open(f"{logs}.out", "w") as stdout, open(f"{logs}.err", "w") as stderr:
        return subprocess.Popen(
            command, stdout=stdout, stderr=stderr, text=True, start_new_session=True
        )


def _read(path: str) -> str:
    return Path(path).read_text()


@pytest.fixture
def step_sleep() -> float:
    """How long each step sleeps: 0.3 s and a few random digits, so that no other process on
    the machine has it in its command line and a test can find (and hold) a running step."""
    return float(f"0.3{secrets.randbelow(10**9):09d}")


@pytest.fixture
def straight(tmp_path: Path, step_sleep: float) -> Path:
    require_host_image()
    two_edits_task(tmp_path / "tasks", slow_step=step_sleep)
    out = tmp_path / "straight"
    done = subprocess.run(_command(tmp_path, out), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


def _interrupt_a_held_turn(
    tmp_path: Path, out: Path, procs: ProcessWatch, step_sleep: float
) -> tuple[subprocess.Popen[str], int, int]:
    """Start the run, hold the call of a step after its second turn, press Ctrl-C once and
    wait for its notice; (the run, the held call's pid, the turns committed before it)."""
    process = _start(_command(tmp_path, out), tmp_path / "run")
    db = out / "sprout.db"
    try:
        wait_for_rows(process, db, TURNS, 2, "its second turn")
        held = hold_call(procs, str(step_sleep), process)
        committed = count(db, TURNS)
        assert committed is not None
        os.killpg(process.pid, signal.SIGINT)
        notice = "press Ctrl-C again"
        wait_until(lambda: notice in _read(f"{tmp_path}/run.err"), process, "the Ctrl-C notice")
    except BaseException:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        raise
    return process, held, committed


@pytest.mark.slow
def test_the_first_ctrl_c_finishes_running_turns_prints_the_table_and_exits_130(
    tmp_path: Path, straight: Path, procs: ProcessWatch, step_sleep: float
) -> None:
    out = tmp_path / "interrupted"
    process, held, committed = _interrupt_a_held_turn(tmp_path, out, procs, step_sleep)
    try:
        os.kill(held, signal.SIGCONT)  # the turn running at the Ctrl-C goes on
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    stdout, stderr = _read(f"{tmp_path}/run.out"), _read(f"{tmp_path}/run.err")
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert "Ctrl-C again to stop at once" in stderr and "--resume" in stderr
    assert "method" in stdout and "resolved" in stdout, "the table so far is printed"
    assert (count(out / "sprout.db", TURNS) or 0) > committed, "the running turn was committed"
    with sqlite3.connect(out / "sprout.db") as connection:
        statuses = {row[0] for row in connection.execute("SELECT status FROM attempts")}
    assert "error" not in statuses, "the interruption is not recorded as anyone's error"
    interrupted = _walls(out, "WHERE status = 'running'")
    assert interrupted and all(wall > 0 for wall in interrupted.values()), "its leg is counted"

    resumed = subprocess.run(
        [*_command(tmp_path, out), "--resume"], capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert decisions(out) == decisions(straight)
    walls = _walls(out)
    for pair, first_leg in interrupted.items():
        assert walls[pair] > first_leg, f"{pair}: the wall of both legs, summed"


def _walls(out: Path, where: str = "") -> dict[str, float]:
    """Each (task, method)'s wall time in `out`'s run so far, by "TASK METHOD"."""
    with sqlite3.connect(out / "sprout.db") as connection:
        rows = connection.execute(f"SELECT task_id, method, wall_s FROM schedules {where}")
        return {f"{task} {method}": wall for task, method, wall in rows}


@pytest.mark.slow
def test_a_second_ctrl_c_stops_at_once_and_resume_still_finishes_the_run(
    tmp_path: Path, straight: Path, procs: ProcessWatch, step_sleep: float
) -> None:
    out = tmp_path / "aborted"
    process, _, committed = _interrupt_a_held_turn(tmp_path, out, procs, step_sleep)
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    stderr = _read(f"{tmp_path}/run.err")
    assert process.returncode == 130, stderr
    assert "stopped at once" in stderr and "Traceback" not in stderr
    assert count(out / "sprout.db", TURNS) == committed, "it did not wait for the held turn"
    procs.kill_all()  # whatever of the held call is left, so the resumed run starts clean
    assert procs.survivors(str(step_sleep)) == []

    resumed = subprocess.run(
        [*_command(tmp_path, out), "--resume"], capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert decisions(out) == decisions(straight)
