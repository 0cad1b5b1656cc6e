"""Many sandboxes open and idle: how long they take to open, what each holds before its
first call and after it, what a call costs among them (beside the same call with one
sandbox open, in the same run), how long they take to close, and what is left after.
"""

import time
from typing import Any

from _stats import timed
from sprout.sandbox import LayerStore, Sandbox

from . import host
from .sweep import SweepError, tail

SAMPLE = 100
"""Calls timed among the open sandboxes (and, before, in a lone one)."""


def _call(sandbox: Sandbox) -> float:
    seconds, observation = timed(lambda: sandbox.run("true"))
    if observation.exit_code != 0:
        raise SweepError(f"true: exit code {observation.exit_code}: {observation.output}")
    return seconds


def _lone_calls(store: LayerStore, base: str, count: int) -> list[float]:
    """The baseline: `count` calls in a sandbox alone (after a first, untimed one)."""
    with Sandbox.fork(store, base) as sandbox:
        _call(sandbox)
        return [_call(sandbox) for _ in range(count)]


def idle(store: LayerStore, base: str, count: int, folder: str, log: Any) -> dict:
    """`count` sandboxes forked from `base` and left open; a call in each, then `SAMPLE`
    more spread over them; then all closed and the host searched for what is left."""
    mounts_before = host.mount_count()
    running = set(host.descendants())
    lone = _lone_calls(store, base, SAMPLE)
    host.settle(running)
    before = host.holdings()
    opened: list[Sandbox] = []
    try:
        forks = []
        started = time.perf_counter()
        for _ in range(count):
            fork_s, sandbox = timed(lambda: Sandbox.fork(store, base))
            forks.append(fork_s)
            opened.append(sandbox)
        open_s = time.perf_counter() - started
        log(f"   {count} open in {open_s:.1f} s")
        unused = host.holdings()
        first = [_call(sandbox) for sandbox in opened]
        called = host.holdings()
        step = max(count // SAMPLE, 1)
        among = [_call(opened[i % count]) for i in range(0, step * SAMPLE, step)]
    finally:
        close_s, _ = timed(lambda: [sandbox.close() for sandbox in opened])
    left = host.leftovers(folder, mounts_before, running)
    return {
        "sandboxes": count,
        "open_s": round(open_s, 3),
        "fork": tail(forks),
        "per_sandbox_before_a_call": unused.per(before, count),
        "first_call": tail(first),
        "per_sandbox_after_a_call": called.per(before, count),
        "call_among_them": tail(among),
        "call_alone": tail(lone),
        "close_s": round(close_s, 3),
        "left_after_close": left,
    }
