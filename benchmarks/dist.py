"""Turns per second of `sprout run` on this machine's threads and on a Ray cluster of one and
two worker nodes; how much faster a `--ray` run without `--workers` finishes on three nodes
than on one.

Run it with `sprout bench dist [options]` (as root: the sandboxes are overlay
mounts; Ray from the `dist` extra). Each run is a `sprout run` process of its
own, as a user starts it, playing the example tasks with `make demo`'s model
(`oracle-noise:errors=trap`, no model server) and a small method set:

- local: threads of the one process (`--workers`);
- ray-1: `--ray` on a `ray.cluster_utils.Cluster` whose head has no cores and
  which has one worker node of `--node-cpus` cores;
- ray-2: the same with two such worker nodes (twice the cores Ray may place
  tasks on; on a 2-vCPU machine they are the same two cores).

The cluster starts before the timed run and stops after it; what is timed is
the `sprout run` process, from start to exit, its joining of the cluster
included. Turns per second are the turns stored in the run's `sprout.db` over
that time; medians over `--repeats`, the setups alternated.

Filling the cluster (`--part fill`): the example tasks, one root each
(`pass@1`), played by the trap model waiting `--think` seconds before each
reply (a served model's generation time), with no `--workers`, so the run keeps
as many attempts alive as the cluster has room for:

- fill-1: one worker node of `--node-cpus` cores and memory for that many tasks;
- fill-3: three such nodes.

The speedup is fill-1's median time over fill-3's, the two alternated in each
repeat. A node's cores are logical (Ray's `num_cpus`): on a 2-vCPU machine three
one-core nodes share the same two cores, and only the think time, during which
an attempt waits rather than computes, lets them run side by side.

And the cost of shipping layers between nodes' stores (`--ship-mb` MB in
`--ship-layers` layers of random bytes, `sprout.cluster.ship_cost`: packed by a
Ray task pinned to the node, through Ray's object store, unpacked into a
second store; both stores on this machine's disk, so no network is in it).
`--part runs|fill|ship` runs one part alone. Results go to tables on stdout and
to JSON (`--out`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _stats as stats

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tasks"
SETUPS = ("local", "ray-1", "ray-2")
FILL_SETUPS = ("fill-1", "fill-3")
FILL_METHOD = "pass@1"
"""One root per task: tasks are what spreads over nodes (a task's attempts all run on its
node), and eight of them fill three one-core nodes nearly three times over."""
RUN_TIMEOUT_S = 900


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="sprout bench dist", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each setup")
    parser.add_argument("--workers", type=int, default=4, help="sprout run --workers")
    parser.add_argument("--node-cpus", type=int, default=1, help="cores of each worker node")
    parser.add_argument(
        "--method", default="pass@2,sprout", help="sprout run --method (default pass@2,sprout)"
    )
    parser.add_argument("--ship-mb", type=int, default=100, help="MB shipped per repeat")
    parser.add_argument("--ship-layers", type=int, default=10, help="layers they are in")
    parser.add_argument(
        "--think", type=float, default=2.0, help="fill: seconds the model waits per reply (2)"
    )
    parser.add_argument("--part", choices=("all", "runs", "ship", "fill"), default="all")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    for name in ("repeats", "workers", "node_cpus", "ship_mb", "ship_layers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if not args.think >= 0:
        parser.error("--think must be at least 0")
    return args


def search_options(args: argparse.Namespace) -> list[str]:
    """The turns-per-second runs: `make demo`'s model, `--workers` threads."""
    return [
        "--model", "oracle-noise:errors=trap", "--method", args.method, "--rounds", "1",
        "--workers", str(args.workers),
    ]  # fmt: skip


def fill_options(args: argparse.Namespace) -> list[str]:
    """The runs that fill the cluster: a model that waits, and no `--workers`."""
    return ["--model", f"oracle-noise:errors=trap,think={args.think:g}", "--method", FILL_METHOD]


def stored_turns(out: Path) -> int:
    """Turns the run stored, every attempt's own."""
    from sprout.runfolder import RunFolder

    run = RunFolder.open(out)
    try:
        return sum(len(run.tree.own_turns(attempt)) for attempt in run.tree.attempts())
    finally:
        run.close()


def run_facts(out: Path) -> dict[str, Any]:
    """What the run says it did at once (results.json's `concurrency`) and on how many nodes
    its tasks were placed (its `ray` meta; 0 without `--ray`)."""
    from sprout.runfolder import RunFolder

    concurrency = json.loads((out / "results.json").read_text()).get("concurrency", {})
    run = RunFolder.open(out)
    try:
        ray = run.tree.meta().ray
        placed = [] if ray is None else ray.placements
    finally:
        run.close()
    return {
        "workers": concurrency.get("workers"),
        "peak": concurrency.get("peak"),
        "nodes_used": len({entry.node for entry in placed}),
    }


def play(out: Path, options: list[str], extra: list[str]) -> dict[str, Any]:
    """One `sprout run` of the example tasks; its seconds, turns and turns per second, and
    what it ran at once where."""
    tasks = sorted(str(path) for path in EXAMPLES.iterdir() if (path / "task.toml").exists())
    command = [
        str(Path(sys.executable).parent / "sprout"), "run", *tasks, *options,
        "--quiet", "--out", str(out), *extra,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"sprout bench dist: {' '.join(command)} exited {done.returncode}:\n"
                 f"{done.stdout[-2000:]}{done.stderr[-2000:]}")  # fmt: skip
    turns = stored_turns(out)
    return {
        "tasks": len(tasks),
        "seconds": seconds,
        "turns": turns,
        "turns_per_s": turns / seconds,
        **run_facts(out),
    }


def play_on_cluster(
    nodes: int, folder: Path, args: argparse.Namespace, options: list[str]
) -> dict[str, Any]:
    """One run on a fresh cluster of `nodes` worker nodes, each with its own store."""
    from ray import cluster_utils

    from sprout.sandbox import Limits

    cluster = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        for _ in range(nodes):
            # memory for a task per core at the sandboxes' default limit: the figure is the
            # cores', whatever this machine's memory (each node would claim all of it)
            cluster.add_node(num_cpus=args.node_cpus, memory=args.node_cpus * Limits().memory_bytes)
        cluster.wait_for_nodes()
        extra = ["--ray", cluster.address, "--ray-store", f"{folder}/stores/{{node}}"]
        return play(folder / "run", options, extra)
    finally:
        cluster.shutdown()


def ship(scratch: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """`--repeats` timed shipments on a one-node cluster this process joins."""
    from ray import cluster_utils

    from sprout.cluster import join, leave
    from sprout.cluster.ship_cost import ship_cost

    cluster = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    found = []
    try:
        join(cluster.address)
        try:
            for repeat in range(args.repeats):
                cost = ship_cost(str(scratch / f"ship-{repeat}"), args.ship_mb, args.ship_layers)
                found.append({**vars(cost), "seconds_per_mb": cost.seconds_per_mb})
                print(f"  ship {repeat + 1}/{args.repeats}: {cost.seconds:.2f} s", file=sys.stderr)
        finally:
            leave()
    finally:
        cluster.shutdown()
    return found


def play_setup(setup: str, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One run of `setup`: local threads, `ray-N` or `fill-N` (N worker nodes)."""
    if setup == "local":
        return play(folder / "run", search_options(args), [])
    kind, _, nodes = setup.partition("-")
    options = search_options(args) if kind == "ray" else fill_options(args)
    return play_on_cluster(int(nodes), folder, args, options)


def play_setups(
    scratch: Path, setups: tuple[str, ...], args: argparse.Namespace
) -> dict[str, list[dict[str, Any]]]:
    """`--repeats` runs of each of `setups`, alternated within each repeat."""
    results: dict[str, list[dict[str, Any]]] = {setup: [] for setup in setups}
    for repeat in range(args.repeats):
        for setup in setups:
            folder = scratch / f"{setup}-{repeat}"
            folder.mkdir()
            found = play_setup(setup, folder, args)
            results[setup].append(found)
            print(f"  {setup} run {repeat + 1}/{args.repeats}: {found['seconds']:.1f} s, "
                  f"{found['turns_per_s']:.2f} turns/s, {found['peak']} at once on "
                  f"{found['nodes_used']} nodes", file=sys.stderr)  # fmt: skip
    return results


def runs_table(results: dict[str, list[dict[str, Any]]]) -> str:
    rows = [["setup", "worker nodes", "turns", "run (median)", "turns/s (median)", "range"]]
    for setup, runs in results.items():
        rates = [run["turns_per_s"] for run in runs]
        rows.append([
            setup,
            "-" if setup == "local" else setup.partition("-")[2],
            f"{statistics.median(run['turns'] for run in runs):.0f}",
            f"{statistics.median(run['seconds'] for run in runs):.1f} s",
            f"{statistics.median(rates):.2f}",
            f"{min(rates):.2f}-{max(rates):.2f}",
        ])  # fmt: skip
    return stats.render_table(rows)


def fill_table(results: dict[str, list[dict[str, Any]]]) -> tuple[str, float]:
    """The fill runs' table, and the speedup: fill-1's median time over fill-3's."""
    rows = [["setup", "worker nodes", "at once (limit)", "at once (peak)", "nodes used",
             "run (median)", "range"]]  # fmt: skip
    medians = {}
    for setup, runs in results.items():
        seconds = [run["seconds"] for run in runs]
        medians[setup] = statistics.median(seconds)
        rows.append([
            setup, setup.partition("-")[2],
            "/".join(str(run["workers"]) for run in runs),
            "/".join(str(run["peak"]) for run in runs),
            "/".join(str(run["nodes_used"]) for run in runs),
            f"{medians[setup]:.1f} s", f"{min(seconds):.1f}-{max(seconds):.1f} s",
        ])  # fmt: skip
    speedup = medians["fill-1"] / medians["fill-3"]
    return stats.render_table(rows), speedup


def main(argv: list[str]) -> int:
    args = parse(argv)
    runs: dict[str, list[dict[str, Any]]] = {}
    filled: dict[str, list[dict[str, Any]]] = {}
    shipped: list[dict[str, Any]] = []
    scratch_root = tempfile.gettempdir()
    with tempfile.TemporaryDirectory(prefix="sprout-bench-dist-") as scratch:
        if args.part in ("all", "ship"):
            shipped = ship(Path(scratch), args)
        if args.part in ("all", "runs"):
            runs = play_setups(Path(scratch), SETUPS, args)
        if args.part in ("all", "fill"):
            filled = play_setups(Path(scratch), FILL_SETUPS, args)
    if runs:
        print(runs_table(runs))
    if filled:
        table, speedup = fill_table(filled)
        print(table)
        print(f"fill-3 finishes {speedup:.2f}x faster than fill-1 (medians of {args.repeats}; "
              f"{FILL_METHOD}, think={args.think:g} s, --node-cpus {args.node_cpus})")  # fmt: skip
    if shipped:
        per_mb = statistics.median(cost["seconds_per_mb"] for cost in shipped)
        print(f"shipping {args.ship_mb} MB in {args.ship_layers} layers: "
              f"{1e3 * per_mb:.1f} ms per MB (median of {len(shipped)})")  # fmt: skip
    if args.out is not None:
        stats.write_results(
            args.out, "dist", scratch_root, args, runs=runs, fill=filled, shipping=shipped
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
