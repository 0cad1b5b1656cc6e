"""Search benchmark: the paper's comparison table and its rounds sweep, over seeds and error
models, on the example tasks with the simulated actor (`oracle-noise`).

Run it with `sprout bench search [options]`. For each error model (`independent`,
`trap`) and each seed, one run plays every method on every task (methods share
nothing but the task's base layer, and root k of every method draws the same
noise: common random numbers), then:

- the comparison: Pass@1 (the mean reward of pass@4's roots, a quarter of its
  tokens), Pass@4 with every root charged (the paper's counting), pass@4-first
  (stopping at the first passing root), Shepherd (one round of 7 branches from
  the trace alone) and SPROUT (rounds of 4 and 3, guided by the verifier's
  findings): tasks resolved and tokens, spent and prefix-once;
- the rounds sweep (`--sweep`): SPROUT with 8 branches in one round against 8
  rounds of one, and 4 against 32 branches in one round.

Every figure is a median over the seeds with its range (min-max). This is a
**simulation**: it shows what the machinery does under an assumed error model,
not how a real model would fare (`benchmarks/real_model.sh` runs the same
table against a model server). The entropy baseline needs log-probabilities,
which the simulation has none of. Results go to a table on stdout and to JSON
(`--out`).
"""

import argparse
import datetime
import io
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _stats as stats
from sprout.models.resolve import ModelSpec
from sprout.runfolder import RunFolder
from sprout.search import Method, Progress, RunSettings, parse_methods, run_tasks
from sprout.tasks import load_tasks

COMPARISON = "pass@4,pass@4-first,shepherd,sprout"
SWEEP = {
    "sprout 1x8": (8,),
    "sprout 8x1": (1,) * 8,
    "sprout 1x4": (4,),
    "sprout 1x32": (32,),
}
"""The rounds sweep: one round of 8 against eight rounds of one; 4 against 32 in one round."""
ERROR_MODELS = {
    "independent": "oracle-noise:p=0.3,seed={seed}",
    "trap": "oracle-noise:errors=trap,q=0.8,p=0.1,seed={seed}",
}


def methods(sweep: bool) -> tuple[Method, ...]:
    found = list(parse_methods(COMPARISON))
    if sweep:
        found += [Method(name, "sprout", roots=1, rounds=rounds) for name, rounds in SWEEP.items()]
    return tuple(found)


def one_run(tasks: list[Any], model: str, sweep: bool, workers: int, scratch: str) -> dict:
    """results.json's content of one run of every method."""
    with tempfile.TemporaryDirectory(dir=scratch, prefix="search-") as folder:
        run = RunFolder.create_new(Path(folder) / "run")
        try:
            settings = RunSettings(ModelSpec.parse(model), methods(sweep), workers=workers)
            return run_tasks(tasks, run, settings, Progress(io.StringIO(), quiet=True))
        finally:
            run.close()


def figures(content: dict, method: str, tasks: int) -> dict[str, float]:
    """The figures of one method in one run."""
    summary = content["methods"][method]
    return {
        "resolved": summary["resolved"],
        "resolve_rate": summary["resolved"] / tasks,
        "pass_at_1": summary["pass_at_1"] if summary["pass_at_1"] is not None else float("nan"),
        "spent": summary["tokens"]["spent"],
        "prefix_once": summary["tokens"]["prefix_once"],
        "attempts": summary["attempts"],
        "turns_executed": summary["turns_executed"],
        "turns_reused": summary["turns_reused"],
    }


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def fmt_spread(found: dict[str, float], *, digits: int = 0, percent: bool = False) -> str:
    def text(value: float) -> str:
        if percent:
            return f"{100 * value:.0f}%"
        return f"{value:,.{digits}f}"

    if found["min"] == found["max"]:
        return text(found["median"])
    return f"{text(found['median'])} ({text(found['min'])}-{text(found['max'])})"


PASS_AT_1 = "pass@1 (mean of pass@4's roots)"


def pass_at_1(by_method: dict[str, dict[str, float]], tasks: int) -> dict[str, float]:
    """Pass@1 as the paper reports it: the mean reward of pass@4's four independent roots
    (common random numbers make root 1 of every method the same), and a quarter of their
    tokens."""
    four = by_method["pass@4"]
    return {
        "resolved": four["pass_at_1"] * tasks,
        "resolve_rate": four["pass_at_1"],
        "pass_at_1": four["pass_at_1"],
        "spent": four["spent"] / 4,
        "prefix_once": four["prefix_once"] / 4,
        "attempts": four["attempts"] / 4,
        "turns_executed": four["turns_executed"] / 4,
        "turns_reused": 0,
    }


def table(results: dict[str, Any], markdown: bool) -> str:
    header = (
        "errors",
        "method",
        "resolved",
        "tokens spent",
        "vs pass@4",
        "vs pass@4-first",
        "prefix once",
        "attempts",
    )
    rows: list[tuple[str, ...]] = [header]
    for errors, by_method in results["summary"].items():
        for method, found in by_method.items():
            rows.append(
                (
                    errors,
                    method,
                    fmt_spread(found["resolve_rate"], percent=True),
                    fmt_spread(found["spent"]),
                    fmt_spread(found["spent_vs_pass@4"], digits=2),
                    fmt_spread(found["spent_vs_pass@4-first"], digits=2),
                    fmt_spread(found["prefix_once"]),
                    fmt_spread(found["attempts"], digits=1),
                )
            )
    return stats.render_table(rows, markdown=markdown)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sprout bench search",
        description="Pass@1, Pass@4, pass@4-first, Shepherd and SPROUT (and with --sweep the "
        "rounds sweep) on the example tasks with the simulated actor, over seeds and both "
        "error models; medians with their range.",
    )
    parser.add_argument("--tasks", default="examples/tasks", metavar="DIR")
    parser.add_argument("--seeds", default="1,2,3,4,5", metavar="LIST")
    parser.add_argument(
        "--errors", default="independent,trap", metavar="LIST", help="independent, trap"
    )
    parser.add_argument("--sweep", action="store_true", help="add the rounds sweep")
    parser.add_argument("--workers", type=int, default=2, metavar="N")
    parser.add_argument("--out", default="bench-results/search.json", metavar="PATH")
    parser.add_argument("--markdown", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(list(argv))
    try:
        seeds = [int(part) for part in args.seeds.split(",")]
    except ValueError:
        print(f"sprout bench search: --seeds {args.seeds!r}: expected e.g. 1,2,3", file=sys.stderr)
        return 2
    errors = [part.strip() for part in args.errors.split(",")]
    unknown = [e for e in errors if e not in ERROR_MODELS]
    if unknown or not seeds:
        print(
            f"sprout bench search: --errors {unknown}: expected independent, trap", file=sys.stderr
        )
        return 2
    loaded = load_tasks([args.tasks])
    if loaded.errors or not loaded.tasks:
        print(f"sprout bench search: --tasks {args.tasks}: {loaded.errors}", file=sys.stderr)
        return 2
    tasks = list(loaded.tasks)
    names = [m.name for m in methods(args.sweep)]
    started = time.monotonic()
    runs: dict[str, dict[int, dict[str, dict[str, float]]]] = {}
    with tempfile.TemporaryDirectory(prefix=".sprout-bench-search-", dir=".") as scratch:
        for error_model in errors:
            for seed in seeds:
                model = ERROR_MODELS[error_model].format(seed=seed)
                print(f"[{time.monotonic() - started:6.0f} s] {model}", file=sys.stderr, flush=True)
                content = one_run(tasks, model, args.sweep, args.workers, scratch)
                found = {name: figures(content, name, len(tasks)) for name in names}
                runs.setdefault(error_model, {})[seed] = {
                    PASS_AT_1: pass_at_1(found, len(tasks)),
                    **found,
                }
    summary: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for error_model, by_seed in runs.items():
        for name in [PASS_AT_1, *names]:
            per_seed = [by_seed[seed][name] for seed in seeds]
            found = {key: spread([f[key] for f in per_seed]) for key in per_seed[0]}
            for baseline in ("pass@4", "pass@4-first"):
                ratios = [
                    by_seed[seed][name]["spent"] / by_seed[seed][baseline]["spent"]
                    for seed in seeds
                ]
                found[f"spent_vs_{baseline}"] = spread(ratios)
            summary.setdefault(error_model, {})[name] = found
    results = {
        "benchmark": "search",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": shlex.join(sys.argv),
        "simulation": "oracle-noise replays each task's reference solution with seeded errors",
        "models": {e: ERROR_MODELS[e] for e in errors},
        "tasks": [task.id for task in tasks],
        "seeds": seeds,
        "workers": args.workers,
        "machine": stats.machine_facts("."),
        "elapsed_s": round(time.monotonic() - started, 1),
        "runs": runs,
        "summary": summary,
    }
    out = stats.write_json(args.out, results)
    print(
        f"sprout bench search — {results['date']}, {len(tasks)} tasks, seeds {args.seeds}, "
        f"{results['elapsed_s']:.0f} s; medians over the seeds (min-max); a simulation"
    )
    print(table(results, args.markdown))
    print(f"results: {out}")
    return 0
