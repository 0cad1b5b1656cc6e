"""Holding the flusher of a `sprout run` that a test started as a process, from outside it.

A `sitecustomize.py` on the run's PYTHONPATH wraps the flusher's syncfs (sprout itself reads
no switch for it). Every flush logs the checkpoints it made durable: the layers its store
had sealed when it began. Once the test calls `hold`, the next flush logs what it would
have covered and never ends, as a flush cut short by a crash of the machine: the test kills
the run there and reads which checkpoints the run recorded against what reached the disk.
"""

from __future__ import annotations

import os
from pathlib import Path

SITECUSTOMIZE = """
import os
import threading
from pathlib import Path

try:
    from sprout.sandbox.layers import flusher
except ImportError:  # a Python of the run's that has no sprout: nothing to hold there
    flusher = None

HERE = Path(__file__).resolve().parent


def _sealed(fd):
    store = os.readlink(f"/proc/self/fd/{fd}")
    names = os.listdir(os.path.join(store, "m"))
    return "".join(f"{name[:-5]}\\n" for name in names if name.endswith(".json"))


def _held_syncfs(fd, _syncfs=flusher and flusher.syncfs):
    sealed = _sealed(fd)
    if (HERE / "hold").exists():
        (HERE / "held.tmp").write_text(sealed)
        os.replace(HERE / "held.tmp", HERE / "held")
        threading.Event().wait()
    done = _syncfs(fd)
    with open(HERE / "flushed", "a") as log:
        log.write(sealed)
    return done


if flusher is not None:
    flusher.syncfs = _held_syncfs
"""


class HeldFlush:
    """The hook in `folder` (made here) and what it logged."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True)
        (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
        self.folder = folder

    def env(self) -> dict[str, str]:
        """The environment of a run the hook is loaded into."""
        path = os.pathsep.join(p for p in (str(self.folder), os.environ.get("PYTHONPATH")) if p)
        return {**os.environ, "PYTHONPATH": path}

    def hold(self) -> None:
        """Hold the run's next flush, and every one after it, for good."""
        (self.folder / "hold").touch()

    def held(self) -> set[str] | None:
        """The checkpoints the held flush was to make durable; None until one is held."""
        path = self.folder / "held"
        return set(path.read_text().split()) if path.exists() else None

    def flushed(self) -> set[str]:
        """Every checkpoint a flush of the run made durable."""
        path = self.folder / "flushed"
        return set(path.read_text().split()) if path.exists() else set()
