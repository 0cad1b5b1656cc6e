"""Turns per second of `sprout run` on this machine's threads and on a Ray cluster of one and
two worker nodes.

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

Then the cost of shipping layers between nodes' stores (`--ship-mb` MB in
`--ship-layers` layers of random bytes, `sprout.cluster.ship_cost`: packed by a
Ray task pinned to the node, through Ray's object store, unpacked into a
second store; both stores on this machine's disk, so no network is in it).
`--part` runs one half alone. Results go to a table on stdout and to JSON
(`--out`).
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--part", choices=("all", "runs", "ship"), default="all")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    for name in ("repeats", "workers", "node_cpus", "ship_mb", "ship_layers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def stored_turns(out: Path) -> int:
    """Turns the run stored, every attempt's own."""
    from sprout.runfolder import RunFolder

    run = RunFolder.open(out)
    try:
        return sum(len(run.tree.own_turns(attempt)) for attempt in run.tree.attempts())
    finally:
        run.close()


def play(out: Path, args: argparse.Namespace, extra: list[str]) -> dict[str, Any]:
    """One `sprout run` of the example tasks; its seconds, turns and turns per second."""
    tasks = sorted(str(path) for path in EXAMPLES.iterdir() if (path / "task.toml").exists())
    command = [
        str(Path(sys.executable).parent / "sprout"), "run", *tasks,
        "--model", "oracle-noise:errors=trap", "--method", args.method, "--rounds", "1",
        "--workers", str(args.workers), "--quiet", "--out", str(out), *extra,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"sprout bench dist: {' '.join(command)} exited {done.returncode}:\n"
                 f"{done.stdout[-2000:]}{done.stderr[-2000:]}")  # fmt: skip
    turns = stored_turns(out)
    return {"tasks": len(tasks), "seconds": seconds, "turns": turns, "turns_per_s": turns / seconds}


def play_on_cluster(nodes: int, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
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
        return play(folder / "run", args, extra)
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


def main(argv: list[str]) -> int:
    args = parse(argv)
    results: dict[str, list[dict[str, Any]]] = {setup: [] for setup in SETUPS}
    shipped: list[dict[str, Any]] = []
    scratch_root = tempfile.gettempdir()
    with tempfile.TemporaryDirectory(prefix="sprout-bench-dist-") as scratch:
        if args.part in ("all", "ship"):
            shipped = ship(Path(scratch), args)
        for repeat in range(args.repeats if args.part != "ship" else 0):
            for setup in SETUPS:
                folder = Path(scratch) / f"{setup}-{repeat}"
                folder.mkdir()
                if setup == "local":
                    found = play(folder / "run", args, [])
                else:
                    found = play_on_cluster(int(setup.removeprefix("ray-")), folder, args)
                results[setup].append(found)
                print(f"  {setup} run {repeat + 1}/{args.repeats}: "
                      f"{found['turns_per_s']:.2f} turns/s", file=sys.stderr)  # fmt: skip
    rows = [["setup", "worker nodes", "turns", "run (median)", "turns/s (median)", "range"]]
    for setup in SETUPS if args.part != "ship" else ():
        runs = results[setup]
        rates = [run["turns_per_s"] for run in runs]
        rows.append([
            setup,
            "-" if setup == "local" else setup.removeprefix("ray-"),
            f"{statistics.median(run['turns'] for run in runs):.0f}",
            f"{statistics.median(run['seconds'] for run in runs):.1f} s",
            f"{statistics.median(rates):.2f}",
            f"{min(rates):.2f}-{max(rates):.2f}",
        ])  # fmt: skip
    if len(rows) > 1:
        print(stats.render_table(rows))
    if shipped:
        per_mb = statistics.median(cost["seconds_per_mb"] for cost in shipped)
        print(f"shipping {args.ship_mb} MB in {args.ship_layers} layers: "
              f"{1e3 * per_mb:.1f} ms per MB (median of {len(shipped)})")  # fmt: skip
    if args.out is not None:
        stats.write_results(args.out, "dist", scratch_root, args, runs=results, shipping=shipped)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
