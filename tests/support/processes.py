"""Finding the processes a test started, sandboxed ones included, by a marker in their
command line, and killing what is left of them when the test ends."""

from __future__ import annotations

import contextlib
import os
import signal
import time


class ProcessWatch:
    """Finds processes by a marker in their command line, from the host's /proc.

    Whatever still matches a marker it was asked about is killed (by pid) when
    the test ends, so a failing test leaves nothing running.
    """

    def __init__(self) -> None:
        self.texts: set[str] = set()

    def matching(self, text: str) -> list[int]:
        """Pids of live (non-zombie) processes whose command line contains `text`."""
        found = []
        needle = text.encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    cmdline = handle.read()
            except OSError:
                continue
            if needle in cmdline:
                found.append(int(entry))
        self.texts.add(text)
        return found

    def survivors(self, text: str, grace_s: float = 3.0) -> list[int]:
        """Processes with `text` still alive after `grace_s` (the kernel tears a PID namespace
        down asynchronously, so a killed process may linger for a moment)."""
        deadline = time.monotonic() + grace_s
        while True:
            found = self.matching(text)
            if not found or time.monotonic() >= deadline:
                return found
            time.sleep(0.05)

    def kill_all(self) -> None:
        """Kill what still matches (a fresh scan, so a recycled pid is never hit)."""
        for text in self.texts:
            for pid in self.matching(text):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
