"""Many attempts alive at once on one node, driven straight through the sandbox API: each
attempt is a thread with a sandbox of its own, forked from one checkpoint, that plays turns
of a scripted model (think, then one shell call that appends to a file, then a checkpoint).

For each number of attempts alive: turns per second, each call's and each seal's latency,
each fork's, the CPU this process tree spent per turn (user and system), what each open
sandbox holds on the host (processes, descriptors, memory, cgroups) and the inodes and
cgroups each turn adds.
"""

import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from _stats import percentile, timed
from sprout.sandbox import LayerStore, Sandbox

from . import host

TURN = "echo turn >> log"
"""The call of every turn: a small write, so the seal after it has a layer to seal."""
BARRIER_TIMEOUT_S = 600.0


class SweepError(Exception):
    """An attempt's call failed, or an attempt never reached the others: no figures."""


def tail(seconds: list[float]) -> dict[str, float]:
    """p50, p90 and p99 of `seconds`, in milliseconds."""
    ms = [s * 1e3 for s in seconds]
    return {f"p{q}_ms": round(percentile(ms, q), 3) for q in (50, 90, 99)} | {"n": len(ms)}


@dataclass
class Level:
    """What the attempts of one level recorded (lists are shared; appends are atomic)."""

    attempts: int
    think_s: float
    turns: int
    forks: list[float] = field(default_factory=list)
    first_calls: list[float] = field(default_factory=list)
    calls: list[float] = field(default_factory=list)
    seals: list[float] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    """When each attempt began its timed turns."""
    ends: list[float] = field(default_factory=list)
    """When each attempt ended them."""
    turn_ends: list[float] = field(default_factory=list)
    """When each timed turn ended."""
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.opened = threading.Barrier(self.attempts + 1, timeout=BARRIER_TIMEOUT_S)
        self.go = threading.Barrier(self.attempts + 1, timeout=BARRIER_TIMEOUT_S)
        self.done = threading.Barrier(self.attempts + 1, timeout=BARRIER_TIMEOUT_S)
        self.close = threading.Barrier(self.attempts + 1, timeout=BARRIER_TIMEOUT_S)


def _turn(sandbox: Sandbox, level: Level) -> None:
    call_s, observation = timed(lambda: sandbox.run(TURN))
    if observation.exit_code != 0:
        raise SweepError(f"{TURN}: exit code {observation.exit_code}: {observation.output}")
    seal_s, _ = timed(sandbox.checkpoint)
    level.calls.append(call_s)
    level.seals.append(seal_s)
    level.turn_ends.append(time.perf_counter())


def turns_per_s(level: Level) -> float:
    """Turns ended per second while every attempt was playing (from the last one to start
    its timed turns to the first one to end them): the rate with all of them alive, which
    neither the staggered start of thinking attempts nor the early end of some dilutes.
    Where that window is too short to hold a turn of each, all turns over the whole time."""
    start, end = max(level.starts), min(level.ends)
    within = sum(1 for t in level.turn_ends if start < t <= end)
    if within < level.attempts:
        return len(level.turn_ends) / (max(level.ends) - min(level.starts))
    return within / (end - start)


def _attempt(store: LayerStore, base: str, level: Level, index: int) -> None:
    """One attempt: fork, a first turn (its call starts the sandbox's launcher and network),
    then, once every attempt is open, `level.turns` timed turns; staggered over one think
    time, so that attempts that think do not all call at once."""
    sandbox = None
    try:
        fork_s, sandbox = timed(lambda: Sandbox.fork(store, base))
        level.forks.append(fork_s)
        first_s, observation = timed(lambda: sandbox.run(TURN))
        if observation.exit_code != 0:
            raise SweepError(f"{TURN}: exit code {observation.exit_code}: {observation.output}")
        level.first_calls.append(first_s)
        sandbox.checkpoint()
        level.opened.wait()
        level.go.wait()
        time.sleep(level.think_s * index / level.attempts)
        level.starts.append(time.perf_counter())
        for _ in range(level.turns):
            time.sleep(level.think_s)
            _turn(sandbox, level)
        level.ends.append(time.perf_counter())
        level.done.wait()
        level.close.wait()
    except threading.BrokenBarrierError:
        pass
    except Exception as error:  # one attempt's failure voids the level: say which
        level.errors.append(f"attempt {index}: {type(error).__name__}: {error}")
        for barrier in (level.opened, level.go, level.done, level.close):
            barrier.abort()
    finally:
        if sandbox is not None:
            sandbox.close()


def cpu_figures(
    used: host.Cpu, own_s: float, turns: int, wall_s: float, machine_busy: float
) -> dict[str, Any]:
    """CPU per turn (this process tree's, user and system; and sprout's own process's
    alone) and the CPUs kept busy: by this tree, by sprout's process, by the whole machine
    (which on a shared machine includes other work)."""
    return {
        "cpu_ms_per_turn": {
            "user": round(used.user_s / turns * 1e3, 3),
            "system": round(used.system_s / turns * 1e3, 3),
        },
        "sprout_process_cpu_ms_per_turn": round(own_s / turns * 1e3, 3),
        "cpus_busy": round(used.total_s / wall_s, 3),
        "sprout_process_cpus_busy": round(own_s / wall_s, 3),
        "machine_cpus_busy": round(machine_busy, 3),
    }


def run_level(
    store: LayerStore,
    base: str,
    attempts: int,
    think_s: float,
    turns: int,
    running: Collection[int] = (),
) -> dict:
    """One level: `attempts` attempts alive at once, each `turns` timed turns, once the
    processes of the level before it, all but those in `running`, have gone."""
    level = Level(attempts, think_s, turns)
    host.settle(running)
    before = host.holdings()
    threads = [
        threading.Thread(target=_attempt, args=(store, base, level, i), daemon=True)
        for i in range(attempts)
    ]
    opening = time.perf_counter()
    for thread in threads:
        thread.start()
    try:
        level.opened.wait()
        opening_s = time.perf_counter() - opening
        opened = host.holdings()
        inodes_before = host.inodes(store.path)
        cpu_before, own_before, ticks = host.cpu(), host.own_cpu_s(), host.machine_ticks()
        level.go.wait()
        started = time.perf_counter()
        level.done.wait()
        wall_s = time.perf_counter() - started
        cpu_used, own_used = host.cpu() - cpu_before, host.own_cpu_s() - own_before
        machine_busy = host.machine_cpus_busy(ticks, host.machine_ticks())
        inodes_added = host.inodes(store.path) - inodes_before
        cgroups_added = len(host.sandbox_cgroups()) - opened.cgroups
        level.close.wait()
    except threading.BrokenBarrierError:
        pass
    for thread in threads:
        thread.join()
    if level.errors:
        raise SweepError(f"{attempts} attempts: {level.errors[0]}")
    timed_turns = attempts * turns
    return {
        "attempts": attempts,
        "think_s": think_s,
        "turns": timed_turns,
        "wall_s": round(wall_s, 3),
        "turns_per_s": round(turns_per_s(level), 2),
        "call": tail(level.calls),
        "seal": tail(level.seals),
        "fork": tail(level.forks),
        "first_call": tail(level.first_calls),
        "open_s": round(opening_s, 3),
        **cpu_figures(cpu_used, own_used, timed_turns, wall_s, machine_busy),
        "per_open_sandbox": opened.per(before, attempts),
        "per_turn": {
            "inodes": round(inodes_added / timed_turns, 2),
            "cgroups": cgroups_added / timed_turns,
        },
    }


def sweep(
    store: LayerStore,
    base: str,
    levels: list[int],
    think_s: float,
    turns_for: Any,
    repeat: int,
    log: Any,
) -> list[dict]:
    """Every level `repeat` times, in rounds that go up the levels and then down, so that
    drift in the machine's load spreads over all levels alike."""
    runs: dict[int, list[dict]] = {n: [] for n in levels}
    running = set(host.descendants())
    for round_number in range(repeat):
        for attempts in levels if round_number % 2 == 0 else levels[::-1]:
            found = run_level(store, base, attempts, think_s, turns_for(attempts), running)
            log(
                f"   think {think_s:g} s, {attempts:4d} alive: {found['turns_per_s']:8.1f} "
                f"turns/s, call p50 {found['call']['p50_ms']:.1f} ms"
            )
            runs[attempts].append(found)
    return [runs[n] for n in levels]
