"""Section 0: a turn in the default configuration, by phase, beside what it is measured
against.

The configuration a user gets as root (a store placed on sprout's store filesystem, durable
checkpoints, the default network) beside the same with the store filesystem off (a plain
store: `SPROUT_STORE_FS=off`), with `durable=False`, and a bare `subprocess` of the same
shell. Each round times every configuration in turn, so that drift in the machine's load
hits all alike; a figure is the median over rounds of each round's median:

- a call, `sb.run("true")`, split by the helper's marks (phases.py);
- a checkpoint after a one-line turn: `checkpoint()` returned (the seal), the flush until
  the layer is durable (which runs beside the next turn), and the run database's commit
  of the turn, which waits for that flush;
- fork + first call, by step (phases.fork_phases), and with forks apart (spaced_forks.py).

Then again for the default configuration with BUSY sandboxes playing turns in threads of
their own. Last, the turns themselves (also `sprout bench scale`'s first section): threads
that each fork a sandbox and play `echo >> log` + `checkpoint()` per turn, one sandbox's
p50 and p99 per turn, and the turns/s of BUSY sandboxes over one's.
"""

import os
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from _stats import fmt_ms, fmt_ratio, percentile, timed
from sprout.sandbox import LayerStore, Sandbox
from sprout.tree import RolloutTree, Turn

from .common import WARMUP, BenchError, Context, Row, remove
from .phases import CALL_PHASES, FORK_PHASES, BenchCallFailed, PhaseReader, fork_phases
from .spaced_forks import spaced_forks, spaced_row
from .turn_against import against_rows, turn_against

SECTION = "0. a turn, default configuration"
BUSY = 8
"""Sandboxes playing turns beside the measured one, and the count the throughput compares."""
CONFIGS = ("default", "store fs off", "durable=False")
TARGETS = {"call_ms": 3.0, "call_vs_shell": 2.5, "checkpoint_ms": 2.0, "fork_ms": 5.0}
TAIL_TARGET = 2.0
THROUGHPUT_TARGET = 2.0


def make_store(path: str, config: str) -> LayerStore:
    """A store of `config`, as a run makes its layers (placed where a run's go, unless the
    configuration is the plain store)."""
    if config == "store fs off":
        return LayerStore(path, place=False)
    return LayerStore(path, durable=config != "durable=False")


@dataclass
class Probe:
    """One configuration's sandbox, its checkpoint 0, and a run database to commit turns to."""

    store: LayerStore
    sandbox: Sandbox
    base: str
    tree: RolloutTree
    attempt: int
    turns: int = 0

    @classmethod
    def open(cls, root: str, config: str) -> "Probe":
        store = make_store(os.path.join(root, "layers"), config)
        sandbox = Sandbox.create(store)
        base = sandbox.parent
        tree = RolloutTree(os.path.join(root, "sprout.db"))
        tree.settle = lambda checkpoint: store.wait_durable(checkpoint) and None
        tree.add_task("bench", {})
        attempt = tree.root("bench", [{"role": "system", "content": "bench"}], base).id
        return cls(store, sandbox, base, tree, attempt)

    def checkpoint(self) -> dict[str, float]:
        """One turn's checkpoint by phase: the seal, the rest of the flush, the commit."""
        observation = self.sandbox.run("echo turn >> log")
        if observation.exit_code != 0:
            raise BenchError(f"echo >> log: exit {observation.exit_code}: {observation.output}")
        seal, checkpoint = timed(self.sandbox.checkpoint)
        flush, _ = timed(lambda: self.store.wait_durable(checkpoint))
        self.turns += 1
        turn = Turn(
            attempt_id=self.attempt,
            index=self.turns,
            author="actor",
            text="echo turn >> log",
            calls=(),
            messages=({"role": "assistant", "content": "echo turn >> log"},),
            checkpoint=checkpoint,
        )
        commit, _ = timed(lambda: self.tree.commit_turn(turn))
        return {"seal": seal, "flush": flush, "database commit": commit}

    def close(self) -> None:
        self.sandbox.close()
        self.tree.close()


def _median_of_rounds(rounds: list[list[dict[str, float]]]) -> dict[str, float]:
    """Each key's median over rounds of the round's median, in milliseconds."""
    keys = rounds[0][0].keys()
    return {
        key: statistics.median(statistics.median(s[key] for s in r) for r in rounds) * 1e3
        for key in keys
    }


def _calls(reader: PhaseReader, n: int) -> list[dict[str, float]]:
    found = []
    for _ in range(n):
        phases = reader.call()
        found.append({**phases.seconds, "total": phases.total})
    return found


def _shell(n: int) -> list[dict[str, float]]:
    return [
        {"total": timed(lambda: subprocess.run(["bash", "-c", "true"], check=True))[0]}
        for _ in range(n)
    ]


def _forks(probe: Probe, n: int) -> list[dict[str, float]]:
    found = []
    for _ in range(n):
        seconds, sandbox = fork_phases(probe.store, probe.base)
        sandbox.close()
        found.append({**seconds, "total": sum(seconds.values())})
    return found


@contextmanager
def busy(store: LayerStore, base: str, count: int) -> Iterator[list[int]]:
    """`count` sandboxes forked from `base` playing one-line turns until the block ends;
    yields the list their turn counts go to."""
    stop = threading.Event()
    counts = [0] * count
    failures: list[BaseException] = []

    def play(slot: int) -> None:
        try:
            with Sandbox.fork(store, base) as sandbox:
                while not stop.is_set():
                    sandbox.run("echo busy >> log")
                    sandbox.checkpoint()
                    counts[slot] += 1
        except BaseException as error:  # reported below: the figures would mean nothing
            failures.append(error)

    threads = [threading.Thread(target=play, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield counts
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    if failures:
        raise BenchError(f"a busy sandbox failed: {failures[0]!r}")


def _measure(probes: dict[str, Probe], rounds: int, n: int, fork_n: int) -> dict[str, Any]:
    """Every configuration's calls, checkpoints and forks, `rounds` times, interleaved."""
    readers = {config: PhaseReader(probe.sandbox) for config, probe in probes.items()}
    series: dict[str, dict[str, list[list[dict[str, float]]]]] = {
        config: {"call": [], "checkpoint": [], "fork": []} for config in probes
    }
    shell: list[list[dict[str, float]]] = []
    try:
        for round_ in range(WARMUP + rounds):
            for config, probe in probes.items():
                calls = _calls(readers[config], n)
                checkpoints = [probe.checkpoint() for _ in range(n)]
                _calls(readers[config], 1)  # the root after the last checkpoint: mounted
                forks = _forks(probe, fork_n)
                if round_ >= WARMUP:
                    series[config]["call"].append(calls)
                    series[config]["checkpoint"].append(checkpoints)
                    series[config]["fork"].append(forks)
            if round_ >= WARMUP:
                shell.append(_shell(n))
    except BenchCallFailed as error:
        raise BenchError(str(error)) from None
    finally:
        for reader in readers.values():
            reader.close()
    found: dict[str, Any] = {
        config: {kind: _median_of_rounds(rounds_) for kind, rounds_ in kinds.items()}
        for config, kinds in series.items()
    }
    found["subprocess bash -c true"] = _median_of_rounds(shell)
    return found


def _open_probes(ctx: Context, configs: tuple[str, ...]) -> dict[str, Probe]:
    probes = {}
    for config in configs:
        root = ctx.path("turn-" + config.replace(" ", "-").replace("=", "-"))
        os.makedirs(root)
        probes[config] = Probe.open(root, config)
    return probes


def turn_rates(
    store: LayerStore, base: str, sandboxes: int, turns: int
) -> tuple[list[float], float]:
    """`sandboxes` threads, each a fork of `base` playing `turns` turns of `echo >> log` and
    `checkpoint()`: every turn's seconds, and the turns per second of all of them together."""
    ready = threading.Barrier(sandboxes + 1)
    latencies: list[list[float]] = [[] for _ in range(sandboxes)]
    failures: list[BaseException] = []

    def play(slot: int) -> None:
        try:
            with Sandbox.fork(store, base) as sandbox:
                sandbox.run("true")  # the network and the launcher: the fork's, not a turn's
                ready.wait()
                for _ in range(turns):
                    seconds, _ = timed(lambda: (sandbox.run("echo x >> log"), sandbox.checkpoint()))
                    latencies[slot].append(seconds)
        except BaseException as error:
            failures.append(error)
            ready.abort()

    threads = [threading.Thread(target=play, args=(i,)) for i in range(sandboxes)]
    for thread in threads:
        thread.start()
    with suppress(threading.BrokenBarrierError):
        ready.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    if failures:
        raise BenchError(f"a sandbox playing turns failed: {failures[0]!r}")
    every = [s for found in latencies for s in found]
    return every, len(every) / wall


def turn_tail(
    store: LayerStore, base: str, rounds: int, turns: int, many: int = BUSY
) -> dict[str, Any]:
    """One sandbox's turn latency (p50, p99) and `many` sandboxes' turns/s over one's,
    rounds interleaved; medians over rounds."""
    one_p50, one_p99, ratios, one_rate, many_rate = [], [], [], [], []
    for _ in range(rounds):
        latencies, alone = turn_rates(store, base, 1, turns)
        _, together = turn_rates(store, base, many, turns)
        one_p50.append(percentile(latencies, 50))
        one_p99.append(percentile(latencies, 99))
        ratios.append(percentile(latencies, 99) / percentile(latencies, 50))
        one_rate.append(alone)
        many_rate.append(together)
    return {
        "rounds": rounds,
        "turns_per_sandbox": turns,
        "one_p50_ms": statistics.median(one_p50) * 1e3,
        "one_p99_ms": statistics.median(one_p99) * 1e3,
        "one_p99_over_p50": statistics.median(ratios),
        "one_turns_per_s": statistics.median(one_rate),
        f"{many}_turns_per_s": statistics.median(many_rate),
        f"{many}_over_one": statistics.median(many_rate) / statistics.median(one_rate),
    }


def _phase_cells(found: dict[str, float], phases: tuple[str, ...]) -> str:
    return ", ".join(f"{phase} {fmt_ms(found[phase])}" for phase in phases)


def _rows(
    ctx: Context,
    quiet: dict[str, Any],
    spaced: dict[str, float],
    loaded: dict[str, Any],
    tail: dict[str, Any],
) -> None:
    default, shell = quiet["default"], quiet["subprocess bash -c true"]["total"]
    call, checkpoint, fork = default["call"], default["checkpoint"], default["fork"]
    others = [c for c in CONFIGS if c != "default" and c in quiet]

    def beside(kind: str, key: str) -> str:
        return "; ".join(f"{c} {fmt_ms(quiet[c][kind][key])}" for c in others)

    call_ok = call["total"] <= min(TARGETS["call_ms"], TARGETS["call_vs_shell"] * shell)
    ckpt_ok = checkpoint["seal"] <= TARGETS["checkpoint_ms"]
    fork_ok = fork["total"] <= TARGETS["fork_ms"]
    tail_ok = tail["one_p99_over_p50"] <= TAIL_TARGET
    many = tail[f"{BUSY}_over_one"]
    ctx.rows += [
        Row(
            SECTION,
            'sb.run("true")',
            fmt_ms(call["total"]),
            "",
            f"bash -c true {fmt_ms(shell)}; {beside('call', 'total')}",
            fmt_ratio(call["total"] / shell),
            "≤ 3 ms, ≤ 2.5x bash -c true",
            ctx.target("call p50", call_ok, fmt_ms(call["total"]), "≤ 3 ms, ≤ 2.5x the shell"),
        ),
        Row(SECTION, "  by phase: " + _phase_cells(call, CALL_PHASES), ""),
        Row(
            SECTION,
            "checkpoint() returned, after a one-line turn",
            fmt_ms(checkpoint["seal"]),
            "",
            beside("checkpoint", "seal"),
            "",
            "≤ 2 ms",
            ctx.target("checkpoint p50", ckpt_ok, fmt_ms(checkpoint["seal"]), "≤ 2 ms"),
        ),
        Row(
            SECTION,
            "  then: flush until durable (beside the next turn)",
            fmt_ms(checkpoint["flush"]),
            "",
            beside("checkpoint", "flush"),
        ),
        Row(
            SECTION,
            "  then: the run database's commit of the turn",
            fmt_ms(checkpoint["database commit"]),
            "",
            beside("checkpoint", "database commit"),
        ),
        Row(
            SECTION,
            "fork + first call",
            fmt_ms(fork["total"]),
            "",
            beside("fork", "total"),
            "",
            "≤ 5 ms",
            ctx.target("fork + first call p50", fork_ok, fmt_ms(fork["total"]), "≤ 5 ms"),
        ),
        Row(SECTION, "  by step: " + _phase_cells(fork, FORK_PHASES), ""),
        spaced_row(SECTION, spaced),
        Row(
            SECTION,
            f'with {BUSY} busy sandboxes: sb.run("true")',
            fmt_ms(loaded["default"]["call"]["total"]),
            "",
            f"bash -c true {fmt_ms(loaded['subprocess bash -c true']['total'])}",
        ),
        Row(SECTION, "  by phase: " + _phase_cells(loaded["default"]["call"], CALL_PHASES), ""),
        Row(
            SECTION,
            f"with {BUSY} busy sandboxes: checkpoint() returned; flush; commit",
            fmt_ms(loaded["default"]["checkpoint"]["seal"]),
            "",
            f"flush {fmt_ms(loaded['default']['checkpoint']['flush'])}; commit "
            f"{fmt_ms(loaded['default']['checkpoint']['database commit'])}",
        ),
        Row(
            SECTION,
            f"with {BUSY} busy sandboxes: fork + first call",
            fmt_ms(loaded["default"]["fork"]["total"]),
            "",
            _phase_cells(loaded["default"]["fork"], FORK_PHASES),
        ),
        Row(
            SECTION,
            "one sandbox's turn (echo >> log + checkpoint()), p99 / p50",
            fmt_ms(tail["one_p50_ms"]),
            f"p99 {fmt_ms(tail['one_p99_ms'])}",
            "",
            fmt_ratio(tail["one_p99_over_p50"]),
            "p99 ≤ 2x p50",
            ctx.target("turn p99 / p50", tail_ok, f"{tail['one_p99_over_p50']:.2f}", "≤ 2"),
        ),
        Row(
            SECTION,
            f"{BUSY} sandboxes' turns/s over one sandbox's",
            f"{tail[f'{BUSY}_turns_per_s']:.0f}/s",
            "",
            f"one sandbox {tail['one_turns_per_s']:.0f}/s",
            fmt_ratio(many),
            "≥ 2x",
            ctx.target(
                f"{BUSY} sandboxes' turns/s", many >= THROUGHPUT_TARGET, f"{many:.2f}x", "≥ 2x"
            ),
        ),
    ]


def bench_turn(ctx: Context) -> None:
    """Section 0, as described above; the stores go when it ends."""
    ctx.log("0/7 a turn in the default configuration, by phase")
    rounds, n, fork_n, turns = (1, 5, 3, 20) if ctx.sizes.quick else (3, 10, 5, 100)
    probes = _open_probes(ctx, CONFIGS)
    try:
        quiet = _measure(probes, rounds, n, fork_n)
        spaced = spaced_forks(probes["default"].store, probes["default"].base, rounds, 2 * fork_n)
        default = {"default": probes["default"]}
        ctx.log(f"   again with {BUSY} busy sandboxes")
        with busy(default["default"].store, default["default"].base, BUSY):
            loaded = _measure(default, rounds, n, fork_n)
        ctx.log(f"   turns: one sandbox, then {BUSY}")
        tail = turn_tail(probes["default"].store, probes["default"].base, rounds, turns)
        if ctx.against:
            ctx.log(f"   the same turns from {ctx.against}")
            ctx.results["turn_against"] = turn_against(ctx, ctx.against, rounds, turns // 2)
            ctx.rows += against_rows(SECTION, ctx.results["turn_against"])
    finally:
        for probe in probes.values():
            probe.close()
        for probe in probes.values():
            remove(probe.store.path)
            remove(os.path.dirname(probe.store.path))
    ctx.results["turn"] = {"quiet": quiet, "spaced": spaced, f"busy_{BUSY}": loaded, "turns": tail}
    _rows(ctx, quiet, spaced, loaded, tail)
