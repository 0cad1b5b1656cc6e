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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from sprout.search.halt import Halt

INTERRUPTED = 130
"""The shell's code for a command ended by SIGINT."""


class CtrlC:
    """Whether Ctrl-C was pressed during `halting_on_ctrl_c`."""

    pressed = False


Handler = Callable[[int, FrameType | None], None]


@contextmanager
def handling(signals: Sequence[signal.Signals], handler: Handler) -> Iterator[None]:
    """`handler` for `signals` within the block, the previous handlers after it. Signals
    reach the main thread only: elsewhere this does nothing, and the caller's caller
    handles them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, handler) for number in signals}
    try:
        yield
    finally:
        for number, handler_before in previous.items():
            signal.signal(number, signal.SIG_DFL if handler_before is None else handler_before)


def stop_at_once(command: str, then: str = "") -> NoReturn:
    """Exit 130 now, as a kill would: worker threads may be inside a sandbox call, so
    nothing unwinds; what a next start sweeps (debris, a temporary folder) is left to it.
    The line is written with os.write: a signal handler may call this while the thread it
    interrupted holds stderr's buffer, and print would raise there."""
    os.write(sys.stderr.fileno(), f"\nsprout {command}: stopped at once{then}\n".encode())
    os._exit(INTERRUPTED)


@contextmanager
def halting_on_ctrl_c(halt: Halt, command: str) -> Iterator[CtrlC]:
    """Within the block, Ctrl-C halts `halt` (once) and then aborts the process.

    The signal handler only writes a byte to a pipe; a thread of its own reads it and
    halts. The handler runs in the main thread between two of its steps, wherever it is:
    inside `Halt`'s lock (an attempt ending there) halting would wait for itself forever,
    and inside a print to stderr its own print would raise."""
    seen = CtrlC()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    presses, pressed = os.pipe()

    def watch() -> None:
        while os.read(presses, 1):
            if seen.pressed:
                stop_at_once(command, "; --resume continues")
            seen.pressed = True
            halt.stop("interrupted (Ctrl-C)")
            print(
                f"\nsprout {command}: Ctrl-C: letting running turns finish and commit; "
                "press Ctrl-C again to stop at once (--resume continues either way)",
                file=sys.stderr,
                flush=True,
            )

    watcher = threading.Thread(target=watch, name="sprout-ctrl-c", daemon=True)
    watcher.start()
    try:
        with handling((signal.SIGINT,), lambda _signal, _frame: os.write(pressed, b"\0")):
            yield seen
    finally:
        os.close(pressed)  # the watcher reads what is left, then the end of the pipe
        watcher.join()
        os.close(presses)
