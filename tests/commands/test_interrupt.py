"""Ctrl-C's handler halts a run wherever the main thread is, even inside the run's own locks."""

from __future__ import annotations

import subprocess
import sys

PRESS_INSIDE_THE_HALTS_LOCK = """
import os, signal, sys, time
from sprout.commands.interrupt import halting_on_ctrl_c
from sprout.search.halt import Halt

halt = Halt()
with halting_on_ctrl_c(halt, "run") as ctrl_c:
    with halt._lock:  # as an attempt ending on the main thread holds it
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here, between two steps of this thread
            pass
    deadline = time.monotonic() + 20
    while not halt.is_set() and time.monotonic() < deadline:
        time.sleep(0.01)
print(ctrl_c.pressed, halt.reason)
if len(sys.argv) > 1:
    with halting_on_ctrl_c(halt, "run"):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(20)
"""


def test_ctrl_c_pressed_while_the_main_thread_holds_the_halts_lock_still_halts():
    done = subprocess.run(
        [sys.executable, "-c", PRESS_INSIDE_THE_HALTS_LOCK],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "True interrupted (Ctrl-C)\n"
    assert "press Ctrl-C again to stop at once" in done.stderr


def test_a_second_ctrl_c_exits_130_at_once():
    done = subprocess.run(
        [sys.executable, "-c", PRESS_INSIDE_THE_HALTS_LOCK, "twice"],
        capture_output=True,
        text=True,
        timeout=15,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.endswith("sprout run: stopped at once; --resume continues\n")
