"""What a closed sandbox leaves to end, ended off its caller's time.

Closing a sandbox ends its launcher (and waits for it: the root it keeps mounted pins the
files of the layer the sandbox wrote) and kills its network's processes, so nothing of it
runs after `close` returns. What is left is slower and nobody needs to see it: the kernel
tears the stack's network device down in 15-30 ms before the processes can be reaped,
and removing the sandbox's cgroups (v1's memory controller offlines each) takes up to
milliseconds more. One thread of sprout's does it, in the order it was asked for; `drain`
waits until it is all done: at the interpreter's exit, and in tests that check that
nothing is left.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections import deque
from collections.abc import Callable

_log = logging.getLogger(__name__)


class _Teardown:
    """The steps still to run, and the thread that runs them (started by the first)."""

    def __init__(self) -> None:
        self.steps: deque[Callable[[], None]] = deque()
        self.pending = 0
        self.changed = threading.Condition()
        self.thread: threading.Thread | None = None

    def later(self, step: Callable[[], None]) -> None:
        with self.changed:
            self.steps.append(step)
            self.pending += 1
            if self.thread is None:
                self.thread = threading.Thread(target=self.serve, name="sprout-teardown")
                self.thread.daemon = True
                self.thread.start()
            self.changed.notify_all()

    def serve(self) -> None:
        while True:
            with self.changed:
                self.changed.wait_for(lambda: bool(self.steps))
                step = self.steps.popleft()
            try:
                step()
            except Exception:  # one step's failure must not stop the steps of other sandboxes
                _log.exception("ending a closed sandbox's processes")
            finally:
                with self.changed:
                    self.pending -= 1
                    self.changed.notify_all()

    def drain(self, timeout: float | None) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.pending == 0, timeout)


_teardown = _Teardown()


def later(step: Callable[[], None]) -> None:
    """Run `step` (a wait for processes told to end, then what needs them gone) on the
    teardown thread."""
    _teardown.later(step)


def drain(timeout: float | None = None) -> bool:
    """Wait until every step handed to `later` so far has run; False if `timeout` seconds
    passed first."""
    return _teardown.drain(timeout)


def _forget_in_child() -> None:
    """A forked child has no teardown thread, and its parent's steps are the parent's."""
    global _teardown
    _teardown = _Teardown()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(drain)
