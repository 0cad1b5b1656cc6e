"""monoclock: a monotonic clock, and a fake one that tests move by hand."""

from __future__ import annotations

import time

__version__ = "1.4.0"


class MonotonicClock:
    """The real thing: seconds from an arbitrary start, never going back."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to, in whole seconds (like the cron jobs it was for)."""

    def __init__(self, start: int = 0) -> None:
        self._now = int(start)
        self.slept: list[int] = []

    def now(self) -> int:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds != int(seconds):
            raise TypeError(f"FakeClock moves in whole seconds, got {seconds!r}")
        if seconds < 0:
            raise ValueError(f"a monotonic clock cannot go back ({seconds} s)")
        self._now += int(seconds)

    def sleep(self, seconds: float) -> None:
        self.slept.append(int(seconds))
        self.advance(seconds)
