"""Stopping a run without losing it: Ctrl-C, and a model server that fails every call.

A halted run starts nothing new. Attempts in flight stop before their next model
call and stay `running` at their last committed turn; (task, method) pairs stay
unfinished. So `--resume` continues exactly where the halt left off, as it does
after a kill, and nothing is recorded as a failure of the model.
"""

from __future__ import annotations

import threading

from sprout.errors import SproutError
from sprout.tree import Attempt

FAULTS_TO_HALT = 3
"""Attempts in a row that a model fault ended, with no attempt that got its replies in
between, before the run stops: a server that is down fails every task the same way."""


class Halted(Exception):
    """Raised out of a schedule when the run is halting; the pair is left unfinished."""


class AttemptFault(SproutError):
    """Attempts of a pair ended `error` (the model server, the sandbox, a crash of sprout):
    the pair is recorded with this error, and `--resume` retries the model and sandbox
    faults. `count` is what the progress line says, the reason having been told."""

    def __init__(self, count: str, reason: str) -> None:
        super().__init__(f"{count}: {reason}")
        self.count = count


class Halt:
    """Whether, and why, the run stops starting work; shared by every worker thread."""

    def __init__(self, faults_to_halt: int = FAULTS_TO_HALT) -> None:
        self.faults_to_halt = faults_to_halt
        self.reason: str | None = None
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._faults_in_a_row = 0

    def is_set(self) -> bool:
        return self._event.is_set()

    def stop(self, reason: str) -> bool:
        """Halt with `reason`; True the first time (the caller says it once)."""
        with self._lock:
            if self._event.is_set():
                return False
            self.reason = reason
            self._event.set()
            return True

    def check(self) -> None:
        """Raise `Halted` when the run is halting: called before starting anything new."""
        if self._event.is_set():
            raise Halted(self.reason or "halted")

    def attempt_ended(self, attempt: Attempt) -> bool:
        """Count `attempt`'s end towards the model-fault breaker; True when it halts the run."""
        with self._lock:
            if attempt.status == "running":
                return False
            if attempt.fault != "model":
                self._faults_in_a_row = 0
                return False
            self._faults_in_a_row += 1
            tripped = self._faults_in_a_row >= self.faults_to_halt
        if tripped:
            first_line = (attempt.end_reason or "").partition("\n")[0]
            return self.stop(
                f"{self.faults_to_halt} attempts in a row got no reply from the model "
                f"({first_line}); fix the server, then --resume"
            )
        return False
