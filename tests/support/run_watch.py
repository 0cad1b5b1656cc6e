"""Watching a `sprout run` that a test started as a process: readiness, never a fixed sleep.

A run makes its sprout.db while the test looks, so a query may meet no file, no tables
or a schema half made: `count` answers None until the run's tables answer it. A test that
needs the run to stand still at a known point holds one of its shell calls instead of
hoping it is slow enough: a `sleep MARKER` in the task's commands, stopped (`hold_call`)
or left sleeping, and ended (`release`) when the test lets the run go on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tests.support.processes import ProcessWatch

WAIT_S = 120.0
"""How long a run may take to reach a point on a loaded machine before the test fails."""

T = TypeVar("T")


def count(db: Path, query: str) -> int | None:
    """The first column of `query`'s first row, or None while the run has not made the
    tables it reads (no file yet, a schema still being written, a database still locked)."""
    if not db.exists():  # connecting would create it
        return None
    try:
        with contextlib.closing(sqlite3.connect(db, timeout=1)) as connection:
            return connection.execute(query).fetchone()[0]
    except sqlite3.DatabaseError:  # OperationalError (no such table, locked) among them
        return None


def wait_until(
    found: Callable[[], T | None],
    process: subprocess.Popen[str] | subprocess.Popen[bytes],
    what: str,
) -> T:
    """Poll `found` until it returns something truthy; fail with `what` if the run exits or
    stalls first (the run is killed then, so the test leaves nothing running)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        result = found()
        if result:
            return result
        if process.poll() is not None:
            raise AssertionError(f"the run exited ({process.returncode}) before {what}")
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            raise AssertionError(f"the run did not reach {what} in {WAIT_S:g} s")
        time.sleep(0.05)


def wait_for_rows(
    process: subprocess.Popen[str] | subprocess.Popen[bytes],
    db: Path,
    query: str,
    at_least: int,
    what: str,
) -> int:
    """Wait until `query` on the run's sprout.db counts `at_least`; return the count."""

    def enough() -> int | None:
        found = count(db, query)
        return found if found is not None and found >= at_least else None

    return wait_until(enough, process, what)


def hold_call(
    procs: ProcessWatch, marker: str, process: subprocess.Popen[str] | subprocess.Popen[bytes]
) -> int:
    """Stop (SIGSTOP) the next sandboxed process whose command line holds `marker` and
    return its pid: the run's shell call, and so its turn, waits there until SIGCONT."""

    def stopped() -> int | None:
        for pid in procs.matching(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                if _state(pid) == "T" and pid in procs.matching(marker):
                    return pid
                os.kill(pid, signal.SIGCONT)  # it ended, or the pid went to someone else
        return None

    return wait_until(stopped, process, f"a call running {marker}")


def release(
    procs: ProcessWatch, marker: str, process: subprocess.Popen[str] | subprocess.Popen[bytes]
) -> None:
    """Until `process` ends, kill each process whose command line holds `marker` as soon as
    it appears: a call held by `sleep MARKER` goes on past its sleep."""
    deadline = time.monotonic() + WAIT_S
    while process.poll() is None and time.monotonic() < deadline:
        for pid in procs.matching(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _state(pid: int) -> str:
    """A process's state letter from /proc (T: stopped); waits for the stop to land."""
    deadline = time.monotonic() + 5
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            return "gone"
        if state == "T" or time.monotonic() > deadline:
            return state
        time.sleep(0.01)
