"""Ctrl-C for long commands: the first one finishes in order, the second one stops at once.

The first Ctrl-C halts the run (`sprout.search.halt.Halt`): nothing new starts,
running turns finish and commit, and the command prints what it has and exits
130. A second Ctrl-C exits at once, as a kill would: the store loses at most the
turns in flight, and `--resume` continues either way.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sprout.search.halt import Halt

INTERRUPTED = 130
"""The shell's code for a command ended by SIGINT."""


class CtrlC:
    """Whether Ctrl-C was pressed during `halting_on_ctrl_c`."""

    pressed = False


@contextmanager
def halting_on_ctrl_c(halt: Halt, command: str) -> Iterator[CtrlC]:
    """Within the block, Ctrl-C halts `halt` (once) and then aborts the process."""
    seen = CtrlC()
    if threading.current_thread() is not threading.main_thread():
        yield seen  # signals reach the main thread only; its caller handles them
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        if not seen.pressed:
            seen.pressed = True
            halt.stop("interrupted (Ctrl-C)")
            print(
                f"\nsprout {command}: Ctrl-C: letting running turns finish and commit; "
                "press Ctrl-C again to stop at once (--resume continues either way)",
                file=sys.stderr,
                flush=True,
            )
            return
        print(f"\nsprout {command}: stopped at once; --resume continues", file=sys.stderr)
        sys.stderr.flush()
        os._exit(INTERRUPTED)  # worker threads may be inside a sandbox call: no unwinding

    previous = signal.signal(signal.SIGINT, handle)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)
