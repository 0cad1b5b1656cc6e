"""Whether a process that left something behind (a hold, a cgroup, a scratch folder) still
runs: what every sweep of debris asks before it removes anything."""

from __future__ import annotations

import functools
import os


def process_start(pid: int | str) -> str | None:
    """When process `pid` (or `self`) started, in clock ticks since boot; None when there
    is none. With the pid it names a process for good: a recycled pid starts later."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            text = handle.read()
        return text[text.rindex(")") + 2 :].split()[19]  # field 22, counted after the name
    except (OSError, ValueError, IndexError):
        return None


def own_start() -> str | None:
    """`process_start` of this process, read once: every layer a sandbox starts writes it
    into a hold."""
    return _start_once(os.getpid())


@functools.cache
def _start_once(pid: int) -> str | None:
    """Keyed by pid: a child made by fork reads its own."""
    return process_start(pid)


def process_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
