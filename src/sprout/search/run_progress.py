"""Live progress of a run: one line per event, safe to call from every worker thread.

Plain lines rather than a redrawn screen, so the same output reads well in a
terminal, a CI log and a file, and survives a kill with everything it said.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from sprout.tree import Attempt


class Progress:
    """Prints events as `[  12.3s] TASK  METHOD  what happened`.

    `tag` heads every line: a run without isolation says so on each of them.
    """

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False, tag: str = "") -> None:
        self.stream = stream or sys.stdout
        self.quiet = quiet
        self.tag = f"{tag} " if tag else ""
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._faults_told: set[tuple[str, str]] = set()

    def event(self, task_id: str, method: str, text: str) -> None:
        if self.quiet:
            return
        elapsed = time.monotonic() - self._started
        with self._lock:
            print(
                f"[{elapsed:7.1f}s] {self.tag}{task_id}  {method}  {text}",
                file=self.stream,
                flush=True,
            )

    def header(self, text: str) -> None:
        """What the run is about to do, before its first event: how many pairs, how many
        sandboxes at once and why."""
        if not self.quiet:
            elapsed = time.monotonic() - self._started
            with self._lock:
                print(f"[{elapsed:7.1f}s] {self.tag}{text}", file=self.stream, flush=True)

    def warning(self, text: str) -> None:
        """A problem of sprout's own (not of a task or method), always printed, on stderr."""
        with self._lock:
            print(f"{self.tag}warning: {text}", file=sys.stderr, flush=True)

    def halting(self, reason: str) -> None:
        """The run stops starting work: said once, whichever thread noticed."""
        if not self.quiet:
            with self._lock:
                print(f"{self.tag}HALTING: {reason}", file=self.stream, flush=True)

    def attempt_done(self, attempt: Attempt, turns: int) -> None:
        """The outcome of a verified, stopped or faulted attempt, in one line; a fault's
        reason is given in full the first time the (task, method) meets one."""
        if attempt.status == "error":
            key = (attempt.task_id, attempt.method)
            with self._lock:
                first = key not in self._faults_told
                self._faults_told.add(key)
            reason = (attempt.end_reason or "").partition("\n")[0]
            outcome = f"ERROR ({attempt.fault}): " + (reason if first else "as above")
        elif attempt.status == "stopped":
            outcome = "stopped (another attempt passed)"
        elif attempt.passed:
            outcome = "PASS"
        else:
            summary = (attempt.diagnostics or {}).get("summary", "")
            counts = summary.partition(";")[0][:120]  # "4 of 9 tests passed"; names are in the db
            outcome = f"fail: {counts}" if counts else "fail"
        self.event(attempt.task_id, attempt.method, f"{label(attempt)}: {outcome} ({turns} turns)")


def label(attempt: Attempt) -> str:
    """`root #3` or `branch #7 of #3 at 2 (round 1, guided)`."""
    if attempt.parent_id is None:
        return f"root #{attempt.id}"
    kind = "guided" if attempt.guided else "unguided"
    return (
        f"branch #{attempt.id} of #{attempt.parent_id} at {attempt.boundary} "
        f"(round {attempt.round}, {kind})"
    )
