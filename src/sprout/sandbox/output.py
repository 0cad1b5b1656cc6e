"""Running a process and keeping a bounded record of what it printed."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sprout.sandbox.types import Observation

DRAIN_AFTER_EXIT_S = 0.5
"""How long to keep reading once the command is gone (its pipe may close a moment later)."""


@dataclass
class CappedOutput:
    """Head and tail of a stream, with the middle cut once it exceeds `cap` bytes.

    An agent needs the first lines (the command's own messages) and the last
    (the error at the end); the middle of a 40 MB build log helps no one.
    """

    cap: int
    total: int = 0

    def __post_init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            excess = len(self.tail) - (self.cap - self.cap // 2)
            if excess > 0:
                del self.tail[:excess]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if not self.truncated:
            return head + tail
        cut = self.total - len(self.head) - len(self.tail)
        return f"{head}\n[... {cut} bytes of output cut ...]\n{tail}"


def run_captured(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    output_cap: int,
    kill: Callable[[subprocess.Popen[bytes]], None],
    cwd: str | None = None,
    new_session: bool = False,
) -> Observation:
    """Run `argv` with stdout and stderr on one pipe, killing it with `kill` at `timeout`.

    Reading stops at end of file or shortly after the process exits, so a
    background child that keeps the pipe open cannot hang the caller.
    """
    start = time.monotonic()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(env),
        cwd=cwd,
        start_new_session=new_session,
    )
    assert process.stdout is not None
    fd = process.stdout.fileno()
    os.set_blocking(fd, False)
    output = CappedOutput(output_cap)
    deadline = start + timeout
    timed_out = False
    stop_reading_at: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if stop_reading_at is None:
                if process.poll() is not None:
                    kill(process)
                    stop_reading_at = now + DRAIN_AFTER_EXIT_S
                elif now >= deadline:
                    timed_out = True
                    kill(process)
                    stop_reading_at = now + DRAIN_AFTER_EXIT_S
            wait_until = stop_reading_at if stop_reading_at is not None else deadline
            if now >= wait_until and stop_reading_at is not None:
                break
            if not selector.select(min(max(wait_until - now, 0.0), 0.05)):
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                break
            output.feed(chunk)
    if not timed_out:
        # The pipe can close before the command exits (it closed its output).
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            timed_out = True
    kill(process)  # whatever the command left behind goes too
    process.stdout.close()
    returncode = process.wait()
    return Observation(
        output=output.text(),
        exit_code=None if timed_out else _exit_code(returncode),
        timed_out=timed_out,
        duration_s=time.monotonic() - start,
        truncated=output.truncated,
        output_bytes=output.total,
    )


def _exit_code(returncode: int) -> int:
    """Shell convention: a command ended by signal N exits 128+N."""
    return 128 - returncode if returncode < 0 else returncode
