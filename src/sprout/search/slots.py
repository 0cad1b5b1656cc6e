"""The sandboxes that may run at once across a run, and how many did.

One `Slots` bounds a whole run: a turn, a verifier run, a rebuild and an analysis each
hold a slot while their sandbox work runs. It counts its holders, so a run can say how many
ran at once (the peak, measured), not only how many it allowed.
"""

from __future__ import annotations

import threading
from types import TracebackType


class Slots:
    """A semaphore of `limit` places that keeps the most places ever held at once (`peak`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._free = threading.Semaphore(limit)
        self._lock = threading.Lock()
        self._held = 0
        self._peak = 0

    @property
    def peak(self) -> int:
        with self._lock:
            return self._peak

    def __enter__(self) -> Slots:
        self._free.acquire()
        with self._lock:
            self._held += 1
            self._peak = max(self._peak, self._held)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        with self._lock:
            self._held -= 1
        self._free.release()
