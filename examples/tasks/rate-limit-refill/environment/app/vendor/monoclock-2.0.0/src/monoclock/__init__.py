"""monoclock: a monotonic clock, and a fake one that tests move by hand."""

from __future__ import annotations

import time

__version__ = "2.0.0"


class MonotonicClock:
    """The real thing: seconds from an arbitrary start, never going back."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to: `sleep` and `advance` move it at once."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self.slept: list[float] = []
        """Every `sleep` asked of it, in order."""

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a monotonic clock cannot go back ({seconds} s)")
        self._now += seconds

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)
