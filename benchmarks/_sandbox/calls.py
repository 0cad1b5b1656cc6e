"""Section 1: what one shell call costs, beside `subprocess.run` of the same program.

Also the jail's share of it (the same call without seccomp, without cgroups, as a
machine lacking them runs it: then a launcher in no cgroup starts it), the same call with
its store on tmpfs (where a new inode is free), and with `--against SRC` the same call of
another sprout tree, say the commit before a change, timed in the same run.
"""

import json
import os
import subprocess
import sys
from typing import Any

from _stats import fmt_ms, fmt_ratio, p50, p90, summary, timed
from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.jail.launcher import Launcher

from .common import WARMUP, BenchError, Context, Row, must, new_store, remove, tmpfs_scratch

SECTION = "1. per call"

AGAINST_SCRIPT = r"""
import json, sys, tempfile, time
from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.jail.launcher import Launcher
parent, warmup, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with tempfile.TemporaryDirectory(dir=parent) as scratch:
    with Sandbox.create(LayerStore(scratch + "/s", durable=False, place=False)) as sb:
        times = []
        for i in range(warmup + n):
            start = time.perf_counter()
            sb.run("true")
            if i >= warmup:
                times.append(time.perf_counter() - start)
print(json.dumps(times))
"""
"""`sb.run("true")` timed by another sprout tree (`--against`), in a process of its own."""

JAIL_VARIANTS = {
    "no seccomp": (False, True),
    "no cgroups": (True, False),
    "neither": (False, False),
}
"""The jails a machine without libseccomp, without cgroups or without both runs:
(seccomp on, cgroups on)."""


def _against_series(ctx: Context, source: str, n: int) -> list[float]:
    done = subprocess.run(
        [sys.executable, "-c", AGAINST_SCRIPT, ctx.root, str(WARMUP), str(n)],
        env={**os.environ, "PYTHONPATH": source},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise BenchError(f"--against {source}: {done.stderr.strip().splitlines()[-1:]}")
    return [float(t) for t in json.loads(done.stdout)]


def _jail_variant(
    sandbox: Sandbox, whole: tuple[Any, Any, Any], bare: Any, *, seccomp: bool, cgroups: bool
) -> None:
    """Run `sandbox`'s next calls as a machine without libseccomp or cgroups runs them
    (`whole`: the backend's seccomp flag, cgroup and launcher with the whole jail; `bare`:
    a launcher in no cgroup)."""
    backend: Any = sandbox._backend
    backend.seccomp = whole[0] if seccomp else False
    backend.cgroup = whole[1] if cgroups else None
    backend.launcher = whole[2] if cgroups else bare


def _time_calls(
    ctx: Context, sb: Sandbox, on_tmpfs: Sandbox | None, n: int
) -> dict[str, list[float]]:
    """Every kind of call, once a round: interleaved, so that drift in the machine's load
    hits all alike. Keys: box, exec, plain, shell, tmpfs and the JAIL_VARIANTS."""
    series: dict[str, list[float]] = {
        key: [] for key in ("box", "exec", "plain", "shell", "tmpfs", *JAIL_VARIANTS)
    }
    backend: Any = sb._backend
    must(sb.run("true"), "run true")  # the sandbox's launcher starts at its first call
    whole = (getattr(backend, "seccomp", False), getattr(backend, "cgroup", None))
    whole += (getattr(backend, "launcher", None),)
    bare = Launcher.start(backend.helper, [], backend.store.ids) if ctx.mode != "copy" else None
    for i in range(WARMUP + n):
        timings: dict[str, float] = {}
        timings["box"], obs = timed(lambda: sb.run("true"))
        must(obs, "run true")
        if ctx.mode != "copy":
            for name, (seccomp, cgroups) in JAIL_VARIANTS.items():
                _jail_variant(sb, whole, bare, seccomp=seccomp, cgroups=cgroups)
                timings[name], obs = timed(lambda: sb.run("true"))
                must(obs, f"run true, {name}")
            _jail_variant(sb, whole, bare, seccomp=True, cgroups=True)
        if on_tmpfs is not None:
            timings["tmpfs"], obs = timed(lambda: on_tmpfs.run("true"))
            must(obs, "run true, store on tmpfs")
        timings["exec"], obs = timed(lambda: sb.run("/bin/true"))
        must(obs, "run /bin/true")
        timings["plain"], _ = timed(lambda: subprocess.run(["true"], check=True))
        timings["shell"], _ = timed(lambda: subprocess.run(["/bin/bash", "-c", "true"], check=True))
        if i >= WARMUP:
            for key, seconds in timings.items():
                series[key].append(seconds)
    if bare is not None:
        bare.close()
    return series


def _time_against(ctx: Context, sb: Sandbox, n: int, boxed: list[float]) -> list[float]:
    """The --against tree's calls, alternating five times with this tree's own (which go
    on `boxed`), so that both see the same machine."""
    against: list[float] = []
    if not ctx.against:
        return against
    ctx.log(f"   the same call from {ctx.against}")
    for _ in range(5):
        against += _against_series(ctx, ctx.against, max(n // 5, 1))
        boxed += [timed(lambda: must(sb.run("true"), "run true"))[0] for _ in range(n // 5)]
    return against


def bench_calls(ctx: Context) -> None:
    """sb.run("true") and its variants, beside subprocess.run."""
    ctx.log("1/7 per-call overhead")
    n = ctx.sizes.repeat * 2
    store = new_store(ctx, "calls", durable=False)
    sb = Sandbox.create(store)
    # diagnostic only: the same call with its store on tmpfs, where a new inode is free
    shm_root = tmpfs_scratch() if ctx.mode != "copy" else None
    on_tmpfs = None
    if shm_root is not None:
        on_tmpfs = Sandbox.create(
            LayerStore(os.path.join(shm_root, "s"), durable=False, place=False)
        )
    series = _time_calls(ctx, sb, on_tmpfs, n)
    against = _time_against(ctx, sb, n, series["box"])
    sb.close()
    if on_tmpfs is not None and shm_root is not None:
        on_tmpfs.close()
        remove(shm_root)
    _overhead(ctx, series)
    _jail_shares(ctx, series)
    if against:
        _against_row(ctx, series, against)
    if series["tmpfs"]:
        _tmpfs_row(ctx, series)


def _overhead(ctx: Context, series: dict[str, list[float]]) -> None:
    """The call against subprocess.run, against the shell it runs, and exec'ing a binary."""
    s_box, s_plain, s_shell = (
        summary(series["box"]),
        summary(series["plain"]),
        summary(series["shell"]),
    )
    s_exec = summary(series["exec"])
    overhead = p50(s_box) - p50(s_plain)
    ctx.results["per_call"] = {
        "sandbox_run_true": s_box,
        "subprocess_true": s_plain,
        "subprocess_bash_c_true": s_shell,
        "sandbox_run_bin_true": s_exec,
        "overhead_p50_ms": overhead,
        "overhead_vs_bash_p50_ms": p50(s_box) - p50(s_shell),
    }
    if series["tmpfs"]:
        ctx.results["per_call"]["sandbox_run_true_store_on_tmpfs"] = summary(series["tmpfs"])
    verdict = ctx.target(
        "per-call overhead", overhead < 15, f"{overhead:.2f} ms", "< 15 ms above subprocess"
    )
    ctx.rows += [
        Row(
            SECTION,
            'sb.run("true")',
            fmt_ms(p50(s_box)),
            fmt_ms(p90(s_box)),
            f'subprocess.run(["true"]) {fmt_ms(p50(s_plain))}',
            f"+{fmt_ms(overhead)}",
            "< +15 ms",
            verdict,
        ),
        Row(
            SECTION,
            '  same, vs the shell it runs (bash -c "true")',
            fmt_ms(p50(s_box)),
            fmt_ms(p90(s_box)),
            f"subprocess bash -c true {fmt_ms(p50(s_shell))}",
            f"+{fmt_ms(p50(s_box) - p50(s_shell))}",
        ),
        Row(
            SECTION,
            '  sb.run("/bin/true"): the shell execs a binary from the image',
            fmt_ms(p50(s_exec)),
            fmt_ms(p90(s_exec)),
            f'subprocess.run(["true"]) {fmt_ms(p50(s_plain))}',
            f"+{fmt_ms(p50(s_exec) - p50(s_plain))}",
        ),
    ]


def _jail_shares(ctx: Context, series: dict[str, list[float]]) -> None:
    """What each part of the jail costs: the call without it, against the whole jail."""
    s_box = ctx.results["per_call"]["sandbox_run_true"]
    for name in JAIL_VARIANTS:
        if not series[name]:
            continue
        s_bare = summary(series[name])
        ctx.results["per_call"][f"sandbox_run_true_{name.replace(' ', '_')}"] = s_bare
        ctx.rows.append(
            Row(
                SECTION,
                f'  the jail\'s share: sb.run("true") with {name}',
                fmt_ms(p50(s_bare)),
                fmt_ms(p90(s_bare)),
                f"whole jail {fmt_ms(p50(s_box))}",
                f"{p50(s_box) - p50(s_bare):+.2f} ms",
                "",
                "what that part costs",
            )
        )


def _against_row(ctx: Context, series: dict[str, list[float]], against: list[float]) -> None:
    """This tree's call against the --against tree's: a change's cost per call."""
    s_box = ctx.results["per_call"]["sandbox_run_true"]
    s_against = summary(against)
    extra = p50(s_box) - p50(s_against)
    ctx.results["per_call"]["against"] = {"source": ctx.against, "sandbox_run_true": s_against}
    ctx.rows.append(
        Row(
            SECTION,
            f'  sb.run("true") of the --against tree ({ctx.against})',
            fmt_ms(p50(s_against)),
            fmt_ms(p90(s_against)),
            f"this tree {fmt_ms(p50(s_box))}",
            f"{extra:+.2f} ms",
            "<= +3 ms",
            ctx.target("the jail's cost per call", extra <= 3, f"{extra:+.2f} ms", "<= +3 ms"),
        )
    )


def _tmpfs_row(ctx: Context, series: dict[str, list[float]]) -> None:
    """The call with its store on tmpfs: not a target, it isolates what inodes cost."""
    s_box = ctx.results["per_call"]["sandbox_run_true"]
    s_tmpfs = summary(series["tmpfs"])
    ctx.rows.append(
        Row(
            SECTION,
            '  diagnostic: sb.run("true") with the store on tmpfs',
            fmt_ms(p50(s_tmpfs)),
            fmt_ms(p90(s_tmpfs)),
            f"store in the store dir {fmt_ms(p50(s_box))}",
            fmt_ratio(p50(s_tmpfs) / p50(s_box)),
            "",
            "not a target: isolates inode cost",
        )
    )
