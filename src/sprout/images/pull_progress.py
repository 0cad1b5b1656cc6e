"""How pulls show their progress: one line redrawn on a terminal (bytes, layers, ETA for
every pull under way), one line per finished image otherwise, as a log reads best."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TextIO


@dataclass
class Transfer:
    """One image's download: what it needs, what it has."""

    name: str
    total_bytes: int
    layers: int
    done_bytes: int = 0
    done_layers: int = 0
    started: float = field(default_factory=time.monotonic)


def _megabytes(count: float) -> str:
    return f"{count / 1e6:.1f}"


class PullProgress:
    """The progress of every pull of one process, drawn on `out` (stderr by default)."""

    def __init__(self, out: TextIO | None = None, *, live: bool | None = None) -> None:
        self.out = out or sys.stderr
        self.live = self.out.isatty() if live is None else live
        self._transfers: dict[str, Transfer] = {}
        self._lock = threading.Lock()
        self._drawn = 0

    def start(self, transfer: Transfer) -> None:
        with self._lock:
            self._transfers[transfer.name] = transfer
            self._draw()

    def update(self, name: str, done_bytes: int, done_layers: int) -> None:
        with self._lock:
            transfer = self._transfers.get(name)
            if transfer is not None:
                transfer.done_bytes = min(done_bytes, transfer.total_bytes)
                transfer.done_layers = done_layers
                self._draw()

    def finish(self, name: str, line: str | None = None) -> None:
        """`name` is done: `line` says how, once. A failed pull says nothing here: its error
        goes to whoever asked for the image, which says it once."""
        with self._lock:
            self._transfers.pop(name, None)
            self._clear()
            if line is not None:
                print(line, file=self.out, flush=True)
            self._draw()

    def _clear(self) -> None:
        if self.live and self._drawn:
            self.out.write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _draw(self) -> None:
        if not self.live or not self._transfers:
            return
        transfers = list(self._transfers.values())
        total = sum(t.total_bytes for t in transfers)
        done = sum(t.done_bytes for t in transfers)
        elapsed = max(time.monotonic() - min(t.started for t in transfers), 1e-3)
        rate = done / elapsed
        eta = f"{(total - done) / rate:.0f} s" if rate > 0 else "?"
        what = transfers[0].name if len(transfers) == 1 else f"{len(transfers)} images"
        line = (
            f"pulling {what}: {_megabytes(done)}/{_megabytes(total)} MB, "
            f"{sum(t.done_layers for t in transfers)}/{sum(t.layers for t in transfers)} "
            f"layers, {_megabytes(rate)} MB/s, ETA {eta}"
        )
        self._clear()
        self.out.write(line)
        self.out.flush()
        self._drawn = len(line)
