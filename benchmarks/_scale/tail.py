"""The per-call tail with one sandbox open, and where it came from.

Four series, one call of each per round, so that the machine's load hits all alike:

- the call as sprout makes it: `sb.run("true")`, started by the sandbox's launcher, a
  process already inside the sandbox's cgroups (jail/launcher.py);
- the same call started the way sprout started every call before the launcher: its
  helper, a child of this process, joins the sandbox's cgroups (box.c's `--cgroup`);
- the join alone: a shell that writes 0 to `cgroup.procs` in each of a sandbox's cgroups,
  beside the same shell doing nothing else (a cgroup set of this section's own).
"""

import statistics
import subprocess
from typing import Any

from _stats import percentile, timed
from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.backends import overlay
from sprout.sandbox.backends.process import command_script, run_captured
from sprout.sandbox.jail import cgroups

from .sweep import SweepError

JOIN = 'for d; do echo 0 > "$d/cgroup.procs"; done'
NO_JOIN = 'for d; do : "$d"; done'


def _launched(sandbox: Sandbox) -> float:
    seconds, observation = timed(lambda: sandbox.run("true"))
    if observation.exit_code != 0:
        raise SweepError(f"true: exit code {observation.exit_code}: {observation.output}")
    return seconds


def _joining(sandbox: Sandbox) -> float:
    """The call with a per-call join: the helper run by this process with `--cgroup`."""
    backend: Any = sandbox._backend
    fds = backend._network_fds(sandbox)
    with command_script(b"true") as script:
        argv = backend._argv(sandbox, [overlay.SCRIPT_PATH], script_fd=script)
        seconds, observation = timed(
            lambda: run_captured(
                argv,
                env=overlay._environment(sandbox.config),
                timeout=60,
                output_cap=sandbox.config.limits.output_bytes,
                kill=overlay._kill_helper,
                pass_fds=(script, *fds),
            )
        )
    if observation.exit_code != 0:
        raise SweepError(f"true, joining: exit code {observation.exit_code}: {observation.output}")
    return seconds


def _shell(script: str, directories: list[str]) -> float:
    return timed(lambda: subprocess.run(["sh", "-c", script, "sh", *directories], check=True))[0]


def _figures(series: list[list[float]]) -> dict[str, float]:
    """p50, p90 and p99 over every round's calls (ms), and the median over the rounds of
    each round's p99 / p50: the tail's ratio, steadier on a noisy machine than one p99."""
    ms = [s * 1e3 for one in series for s in one]
    ratios = [percentile(one, 99) / percentile(one, 50) for one in series]
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 3),
        "p90_ms": round(percentile(ms, 90), 3),
        "p99_ms": round(percentile(ms, 99), 3),
        "p99_over_p50": round(percentile(ms, 99) / percentile(ms, 50), 2),
        "p99_over_p50_median_of_rounds": round(statistics.median(ratios), 2),
    }


def call_tail(store: LayerStore, base: str, rounds: int, calls: int) -> dict:
    """`rounds` rounds of `calls` calls of each series (after two untimed ones)."""
    names = ("launched", "joining", "join alone", "same shell, no join")
    series: dict[str, list[list[float]]] = {name: [] for name in names}
    found = cgroups.support()
    scratch = cgroups.SandboxCgroup.create(cgroups.CgroupLimits(0, 0, 0), found)
    try:
        with Sandbox.fork(store, base) as sandbox:
            runs = {
                "launched": lambda: _launched(sandbox),
                "joining": lambda: _joining(sandbox),
                "join alone": lambda: _shell(JOIN, scratch.directories),
                "same shell, no join": lambda: _shell(NO_JOIN, scratch.directories),
            }
            for run in [*runs.values(), *runs.values()]:  # untimed: caches, first joins
                run()
            for _ in range(rounds):
                one: dict[str, list[float]] = {name: [] for name in names}
                for _ in range(calls):
                    for name, run in runs.items():
                        one[name].append(run())
                for name in names:
                    series[name].append(one[name])
    finally:
        scratch.remove()
    figures = {name: _figures(series[name]) for name in names}
    figures["cgroups"] = found.describe()
    return figures
