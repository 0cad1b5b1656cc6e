"""Section 0 with `--against SRC`: a turn's calls as another sprout tree makes them, beside
this tree's, say the commit before a change.

Each tree plays the same turns in a process of its own (TURN_SCRIPT), the two alternating
round after round so that both see the same machine: a store as a run makes it (placed,
durable), `Sandbox.create(store)`, then per turn a call into the root kept since the last
one (`sb.run("true")`), a checkpoint, the first call after it (`echo >> log`: it builds
the root again, over one layer more), and every FORK_EVERY turns a fork of that checkpoint
and its first call. A figure is the median over rounds of each process's median.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import sprout
from _stats import fmt_ms, fmt_ratio

from .common import BenchError, Context, Row, remove

FIGURES = ("call", "checkpoint", "first call after a checkpoint", "fork + first call")
FIGURES_JSON = json.dumps(FIGURES)
FORK_EVERY = 3

TURN_SCRIPT = r"""
import json, os, statistics, sys, time
from sprout.sandbox import LayerStore, Sandbox
store_path, turns, fork_every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
found = {key: [] for key in json.loads(sys.argv[4])}
def timed(key, action):
    start = time.perf_counter()
    result = action()
    found[key].append(time.perf_counter() - start)
    return result
def fork_and_call(checkpoint):
    fork = Sandbox.fork(store, checkpoint)
    fork.run("true")
    return fork
store = LayerStore(store_path)
with Sandbox.create(store) as sb:
    sb.run("true")
    for turn in range(turns):
        timed("call", lambda: sb.run("true"))
        checkpoint = timed("checkpoint", sb.checkpoint)
        timed("first call after a checkpoint", lambda: sb.run(f"echo {turn} >> /tmp/log"))
        if turn % fork_every == 0:
            timed("fork + first call", lambda: fork_and_call(checkpoint)).close()
print(json.dumps({key: statistics.median(times) for key, times in found.items()}))
"""
"""One process's turns, by a tree whose src/ folder is on its PYTHONPATH."""


def _play(ctx: Context, source: str, turns: int) -> dict[str, float]:
    """TURN_SCRIPT's medians, in seconds, from the tree at `source`."""
    scratch = tempfile.mkdtemp(prefix="against-", dir=ctx.root)
    store = os.path.join(scratch, "layers")
    try:
        done = subprocess.run(
            [sys.executable, "-c", TURN_SCRIPT, store, str(turns), str(FORK_EVERY), FIGURES_JSON],
            env={**os.environ, "PYTHONPATH": source},
            capture_output=True,
            text=True,
        )
    finally:
        if os.path.lexists(store):
            remove(store)
        remove(scratch)
    if done.returncode != 0:
        raise BenchError(f"--against {source}: {done.stderr.strip().splitlines()[-1:]}")
    medians: dict[str, float] = json.loads(done.stdout)
    return medians


def turn_against(ctx: Context, against: str, rounds: int, turns: int) -> dict[str, Any]:
    """This tree's turn figures and `against`'s, `rounds` processes each, alternating; in ms."""
    this = str(Path(sprout.__file__).resolve().parents[1])
    played: dict[str, list[dict[str, float]]] = {"this tree": [], "against": []}
    for _ in range(rounds):
        played["this tree"].append(_play(ctx, this, turns))
        played["against"].append(_play(ctx, against, turns))
    return {
        "source": against,
        "rounds": rounds,
        "turns": turns,
        **{
            tree: {key: statistics.median(r[key] for r in runs) * 1e3 for key in FIGURES}
            for tree, runs in played.items()
        },
    }


def against_rows(section: str, found: dict[str, Any]) -> list[Row]:
    """One row a figure: this tree's, the other tree's and their ratio."""
    this, other = found["this tree"], found["against"]
    return [
        Row(
            section,
            f"{key}, this tree beside --against",
            fmt_ms(this[key]),
            baseline=f"{found['source']} {fmt_ms(other[key])}",
            ratio=fmt_ratio(this[key] / other[key]),
        )
        for key in FIGURES
    ]
