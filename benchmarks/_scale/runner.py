"""Real attempts through sprout's runner: `run_tasks` on the example tasks with the oracle
replaying each task's solution after a think time per turn (`oracle:think=S`), as many
attempts alive at once as `--workers` lets.

A level of N attempts runs the first min(N, 8) tasks with pass@k, k = N / tasks, and
`workers = N`, so that all N are alive at once; the figures count everything a run does
per turn (the actor, the run database, checkpoints, the verifier at each attempt's end).
"""

import io
import tempfile
import time
from pathlib import Path
from typing import Any

from _sandbox.common import remove
from sprout.models.resolve import ModelSpec
from sprout.runfolder import RunFolder
from sprout.search import Progress, RunSettings, parse_methods, run_tasks

from . import host
from .sweep import SweepError, cpu_figures


def run_level(tasks: list[Any], attempts: int, think_s: float, scratch: str) -> dict:
    """One run of `attempts` attempts at once, its figures."""
    chosen = tasks[: min(attempts, len(tasks))]
    roots = max(attempts // len(chosen), 1)
    settings = RunSettings(
        ModelSpec.parse(f"oracle:think={think_s:g}"),
        tuple(parse_methods(f"pass@{roots}")),
        workers=attempts,
    )
    folder = Path(tempfile.mkdtemp(prefix="runner-", dir=scratch))
    run = RunFolder.create_new(folder / "run")
    try:
        cpu_before, own_before, ticks = host.cpu(), host.own_cpu_s(), host.machine_ticks()
        started = time.perf_counter()
        content = run_tasks(chosen, run, settings, Progress(io.StringIO(), quiet=True))
        wall_s = time.perf_counter() - started
        cpu_used, own_used = host.cpu() - cpu_before, host.own_cpu_s() - own_before
        machine_busy = host.machine_cpus_busy(ticks, host.machine_ticks())
    finally:
        run.close()
        remove(str(folder / "run" / "layers"))
        remove(str(folder))
    summary = content["methods"][f"pass@{roots}"]
    if summary["errors"] or summary["resolved"] != len(chosen):
        raise SweepError(f"the runner at {attempts} attempts: {summary}")
    turns = summary["turns_executed"]
    return {
        "attempts": summary["attempts"],
        "think_s": think_s,
        "tasks": len(chosen),
        "turns": turns,
        "wall_s": round(wall_s, 3),
        "turns_per_s": round(turns / wall_s, 2),
        "attempts_per_s": round(summary["attempts"] / wall_s, 3),
        **cpu_figures(cpu_used, own_used, turns, wall_s, machine_busy),
    }


def runner_sweep(
    tasks: list[Any], levels: list[int], think_s: float, repeat: int, scratch: str, log: Any
) -> list[list[dict]]:
    """Every level `repeat` times, rounds going up the levels and then down."""
    runs: dict[int, list[dict]] = {n: [] for n in levels}
    for round_number in range(repeat):
        for attempts in levels if round_number % 2 == 0 else levels[::-1]:
            found = run_level(tasks, attempts, think_s, scratch)
            log(
                f"   runner, think {think_s:g} s, {attempts:4d} alive: "
                f"{found['turns_per_s']:7.1f} turns/s"
            )
            runs[attempts].append(found)
    return [runs[n] for n in levels]
