"""Scale benchmark: many attempts alive at once on one node, and many sandboxes open.

Run it with `sprout bench scale [options]` (as root: the sandboxes run over the host
image). Sections, each measured in this one process:

1. the per-call tail with one sandbox: the call as sprout makes it (started by the
   sandbox's launcher, inside its cgroups already) beside the same call with a per-call
   cgroup join (as sprout made every call before the launcher) and the join alone,
   interleaved call by call; the target is p99 <= 2x p50 (median over rounds); then turns
   (`echo >> log` + `checkpoint()`) on a store of the default configuration: one sandbox's
   p99 / p50 (target <= 2) and 8 sandboxes' turns/s over one's (target >= 2x);
2. the sweep: 1, 2, 4 ... --max attempts alive at once, each a thread with a sandbox of
   its own playing turns of a scripted model (think, one shell call, a checkpoint), for
   each --think time: turns/s, call, seal and fork latency, CPU per turn (user, system),
   what each open sandbox holds on the host, inodes and cgroups per turn, and where
   turns/s stops growing and why;
3. the runner: real attempts through `run_tasks` on the example tasks with
   `oracle:think=S` and `--workers N`, up to --runner-max attempts alive;
4. --idle sandboxes open and idle: open time, what each holds, a call among them beside
   one with a lone sandbox, and what is left on the host after they close (processes,
   cgroups, mounts: must be none, or the benchmark exits 1).

Every level is repeated (--repeat) in rounds that go up the levels and back down, and
reported as medians; the machine's load average is recorded at the start and the end.
Results go to a table on stdout (--markdown for docs/benchmarks.md), to JSON (--out) and
to an SVG chart (--svg). The stores live in a temporary folder on the current directory's
filesystem (or --dir), deleted at the end.
"""

import argparse
import os
import shlex
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _stats as stats
from _sandbox.common import BenchError, remove
from _sandbox.turn import BUSY, make_store, turn_tail
from _scale import plot
from _scale.idle import idle
from _scale.report import (
    combine,
    idle_table,
    runner_table,
    saturation,
    sweep_table,
    tail_table,
    turns_table,
)
from _scale.runner import runner_sweep
from _scale.sweep import SweepError, sweep
from _scale.tail import call_tail
from sprout.sandbox import LayerStore, Sandbox
from sprout.tasks import load_tasks

TAIL_TARGET = 2.0
"""p99 / p50 of a call with one sandbox open, at most (reported; the run does not fail on it,
since a loaded machine moves it)."""


SIZES = {
    "max": (256, 32, "most attempts alive at once"),
    "repeat": (3, 1, "runs of each level"),
    "idle": (1000, 100, "sandboxes open and idle at once"),
    "runner_max": (16, 4, "most attempts alive through the runner (0: none)"),
    "tail_rounds": (5, 2, "rounds of the per-call tail"),
    "tail_calls": (100, 30, "calls of each series in a round of the tail"),
}
"""Each sizing option: its default, its default with --quick, what it counts."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sprout bench scale",
        description="Attempts alive at once on one node (1, 2, 4 ... --max), through the "
        "sandbox API and through sprout's runner; sandboxes open and idle; the per-call tail.",
    )
    add = parser.add_argument
    add("--out", default="bench-results/scale.json", metavar="PATH", help="JSON results")
    add("--svg", default=None, metavar="PATH", help="the chart (default: beside --out)")
    add("--think", default="0,2", metavar="LIST", help="think times per turn, seconds (0,2)")
    for name, (full, quick, what) in SIZES.items():
        flag = "--" + name.replace("_", "-")
        add(flag, type=int, metavar="N", help=f"{what} (default {full}; {quick} with --quick)")
    add("--tasks", default="examples/tasks", metavar="DIR", help="the runner's tasks")
    add("--dir", metavar="DIR", help="where the temporary stores go (default: here)")
    add("--quick", action="store_true", help="up to 32 attempts, fewer repeats: a smoke run")
    add("--markdown", action="store_true", help="print the tables as Markdown")
    args = parser.parse_args(argv)
    for name, (full, quick, _) in SIZES.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    try:
        args.think_s = [float(part) for part in args.think.split(",")]
    except ValueError:
        parser.error(f"--think {args.think}: expected seconds, e.g. 0,2")
    counts = [args.max, args.repeat, args.idle, args.tail_rounds, args.tail_calls]
    if min(counts) < 1 or args.runner_max < 0 or min(args.think_s) < 0:
        parser.error(
            "--max, --repeat, --idle, --tail-rounds and --tail-calls must be at least 1, "
            "--runner-max and --think at least 0"
        )
    return args


def levels_up_to(most: int) -> list[int]:
    """1, 2, 4 ... up to `most`, and `most` itself."""
    found = [2**power for power in range(most.bit_length()) if 2**power <= most]
    return found if found[-1] == most else [*found, most]


def turns_for(args: argparse.Namespace, think_s: float) -> Any:
    """How many timed turns each attempt plays at a level: with no think time, enough for
    256 turns a level (64 with --quick), 4 at least; thinking, 3 (2 with --quick)."""
    total = 64 if args.quick else 256

    def turns(attempts: int) -> int:
        if think_s:
            return 2 if args.quick else 3
        return max(4, -(-total // attempts))

    return turns


def _sections(args: argparse.Namespace, root: str, log: Any) -> dict[str, Any]:
    """Every section's figures, on a store of this run's own."""
    store = LayerStore(os.path.join(root, "s"), place=False)
    with Sandbox.create(store, network=False) as created:  # as the example tasks have it
        base = created.parent
    found: dict[str, Any] = {}
    log("1/4 the per-call tail with one sandbox")
    found["tail"] = call_tail(store, base, args.tail_rounds, args.tail_calls)
    log(f"1/4 turns in the default configuration: one sandbox, then {BUSY}")
    found["turns"] = _turns(args, root)
    found["sweep"] = {}
    for think_s in args.think_s:
        log(f"2/4 the sweep, think {think_s:g} s")
        runs = sweep(
            store, base, levels_up_to(args.max), think_s, turns_for(args, think_s), args.repeat, log
        )
        levels = [combine(level) for level in runs]
        found["sweep"][f"{think_s:g}"] = {
            "levels": levels,
            "saturation": saturation(levels, os.cpu_count() or 1),
        }
    found["runner"] = {}
    if args.runner_max:
        tasks = list(load_tasks([args.tasks]).tasks)
        for think_s in args.think_s:
            log(f"3/4 the runner, think {think_s:g} s")
            runs = runner_sweep(
                tasks, levels_up_to(args.runner_max), think_s, args.repeat, root, log
            )
            levels = [combine(level) for level in runs]
            found["runner"][f"{think_s:g}"] = {
                "levels": levels,
                "saturation": saturation(levels, os.cpu_count() or 1),
            }
    log(f"4/4 {args.idle} sandboxes open and idle")
    found["idle"] = idle(store, base, args.idle, root, log)
    return found


def _turns(args: argparse.Namespace, root: str) -> dict[str, Any]:
    """One sandbox's turn tail and BUSY sandboxes' turns/s over one's, on a store of the
    default configuration (placed on the store filesystem, durable checkpoints)."""
    path = os.path.join(root, "default")
    store = make_store(path, "default")
    try:
        with Sandbox.create(store) as created:
            base = created.parent
        return turn_tail(store, base, args.tail_rounds, turns=20 if args.quick else 200)
    finally:
        remove(path)


def _chart(found: dict[str, Any]) -> str:
    """Turns/s through the sandbox API and through the runner, and the call's p50 and p99,
    against the attempts alive; one colour per think time."""
    api: list[plot.Series] = []
    runner: list[plot.Series] = []
    latency: list[plot.Series] = []
    for hue, (think, swept) in enumerate(found["sweep"].items()):
        levels = swept["levels"]
        points = [(level["attempts"], level["turns_per_s"]) for level in levels]
        api.append((f"think {think} s", points, hue, False))
        for q, dashed in (("p50", False), ("p99", True)):
            points = [(level["attempts"], level["call"][f"{q}_ms"]) for level in levels]
            latency.append((f"call {q}, think {think} s", points, hue, dashed))
    for hue, (think, ran) in enumerate(found["runner"].items()):
        points = [(level["attempts"], level["turns_per_s"]) for level in ran["levels"]]
        runner.append((f"think {think} s", points, hue, False))
    panels: list[plot.Panel] = [("turns/s, sandbox API", "turns/s", api, False)]
    if runner:
        panels.append(("turns/s, sprout's runner", "turns/s", runner, False))
    panels.append(("per-call latency, sandbox API", "ms (log scale)", latency, True))
    return plot.chart(panels, "sprout bench scale: medians of the repeats")


def _report(found: dict[str, Any], markdown: bool) -> str:
    parts = ["-- the per-call tail", tail_table(found["tail"], markdown)]
    parts += [
        f"-- turns in the default configuration: one sandbox, then {BUSY}",
        turns_table(found, markdown),
    ]
    for think, sweep_found in found["sweep"].items():
        parts += [
            f"-- the sandbox API, think {think} s",
            sweep_table(sweep_found["levels"], markdown),
        ]
        parts.append(f"saturation: {sweep_found['saturation']['bottleneck']}")
    for think, runner_found in found["runner"].items():
        parts += [f"-- the runner, think {think} s", runner_table(runner_found["levels"], markdown)]
        parts.append(f"saturation: {runner_found['saturation']['bottleneck']}")
    parts += [
        f"-- {found['idle']['sandboxes']} sandboxes open and idle",
        idle_table(found["idle"], markdown),
    ]
    return "\n".join(parts)


def _end_on_sigterm(signum: int, _frame: object) -> None:
    """A terminated benchmark unwinds like an interrupted one: its sandboxes close and its
    stores go."""
    raise SystemExit(128 + signum)


def _checks(found: dict[str, Any]) -> list[dict[str, Any]]:
    """The benchmark's targets, met or not; the last (nothing left) decides its exit code."""
    tail_ratio = found["tail"]["launched"]["p99_over_p50_median_of_rounds"]
    turns = found["turns"]
    clean = found["idle"]["left_after_close"]["clean"]
    return [
        {
            "target": "one sandbox: call p99 <= 2x p50 (median of rounds)",
            "measured": tail_ratio,
            "pass": tail_ratio <= TAIL_TARGET,
        },
        {
            "target": "one sandbox: turn p99 <= 2x p50 (median of rounds)",
            "measured": turns["one_p99_over_p50"],
            "pass": turns["one_p99_over_p50"] <= TAIL_TARGET,
        },
        {
            "target": f"{BUSY} sandboxes' turns/s >= 2x one sandbox's (median of rounds)",
            "measured": turns[f"{BUSY}_over_one"],
            "pass": turns[f"{BUSY}_over_one"] >= 2.0,
        },
        {"target": "nothing left after the sandboxes close", "measured": clean, "pass": clean},
    ]


def _write(
    args: argparse.Namespace, argv: list[str], found: dict[str, Any], parent: str, **facts: Any
) -> None:
    """The JSON document (the machine's facts read at `parent`, where the stores were), the
    chart and the report on stdout."""
    out = Path(args.out)
    svg = Path(args.svg) if args.svg else out.with_suffix(".svg")
    command = shlex.join(["sprout", "bench", "scale", *argv])
    stats.write_results(out, "scale", parent, args, command=command, **facts, **found)
    svg.parent.mkdir(parents=True, exist_ok=True)
    svg.write_text(_chart(found), encoding="utf-8")
    load = facts["machine_load"]
    print(
        f"sprout bench scale — {stats.utc_now()}, {os.cpu_count()} CPUs, load average "
        f"{load['before'][0]} at the start, {load['after'][0]} at the end"
    )
    print(_report(found, args.markdown))
    for check in facts["checks"]:
        print(f"{'PASS' if check['pass'] else 'MISS'}  {check['target']}: {check['measured']}")
    print(f"results: {out}; chart: {svg}")


def main(argv: list[str]) -> int:
    args = parse_args(list(argv))
    if os.geteuid() != 0:
        print(
            "sprout bench scale: needs root (its sandboxes run over the host image)",
            file=sys.stderr,
        )
        return 2
    parent = os.path.abspath(args.dir or os.getcwd())
    root = tempfile.mkdtemp(prefix=".sprout-bench-scale-", dir=parent)
    started = time.monotonic()
    load_before = os.getloadavg()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {message}", file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, _end_on_sigterm)
    try:
        found = _sections(args, root, log)
    except (SweepError, BenchError) as error:
        print(f"sprout bench scale: {error}", file=sys.stderr)
        return 1
    finally:
        remove(root)
    checks = _checks(found)
    load = {"before": load_before, "after": os.getloadavg()}
    _write(
        args,
        argv,
        found,
        parent,
        machine_load={when: [round(x, 2) for x in value] for when, value in load.items()},
        elapsed_s=round(time.monotonic() - started, 1),
        checks=checks,
    )
    return 0 if checks[-1]["pass"] else 1
