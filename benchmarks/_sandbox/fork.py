"""Section 3: what a fork costs, beside `cp -a` of the environment it forks, and the
squash that sealing does every `max_stack` turns (the one checkpoint that is not O(1))."""

import os
import subprocess
import time
from typing import Any

from _stats import fmt_bytes, fmt_ms, fmt_ratio, p50, p90, summary, timed
from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.storefs.extents import disk_usage

from .common import WARMUP, BenchError, Context, Env, Row, must, remove

SECTION = "3. fork"


def _time_forks(env: Env, n: int) -> tuple[list[float], list[float]]:
    """Sandbox.fork of the env's base, and fork + first call: (forks, forks with a call).
    A first fork checks that the env's files are all there to see."""
    check = Sandbox.fork(env.store, env.base)
    seen = must(check.run("find . -type f | wc -l"), "count files").output.strip()
    check.close()
    if seen != str(env.files):
        raise BenchError(f"a fork of the {env.label} env sees {seen} files, not {env.files}")
    forks, fork_runs = [], []
    for i in range(WARMUP + n):
        start = time.perf_counter()
        sb = Sandbox.fork(env.store, env.base)
        forked = time.perf_counter()
        must(sb.run("true"), "first call of a fork")
        ran = time.perf_counter()
        sb.close()
        if i >= WARMUP:
            forks.append(forked - start)
            fork_runs.append(ran - start)
    return forks, fork_runs


def _time_copies(ctx: Context, env: Env, warm: int, rounds: int) -> list[float]:
    """`cp -a` of the env's base layer, `warm` untimed copies first."""
    copies = []
    source = os.path.realpath(env.store.diff_dir(env.base))  # a link on a capped store
    target = ctx.path("cp-copy")
    for i in range(warm + rounds):
        t, _ = timed(lambda s=source, t=target: subprocess.run(["cp", "-a", s, t], check=True))
        remove(target)
        if i >= warm:
            copies.append(t)
    return copies


def bench_fork(ctx: Context, small: Env, big: Env) -> None:
    """Fork and fork + first call of each env, against cp -a; the target is the big env's."""
    ctx.log("3/7 fork vs cp -a")
    n = ctx.sizes.repeat
    os.sync()
    out: dict[str, Any] = {}
    for env in (small, big):
        forks, fork_runs = _time_forks(env, n)
        # the big env was just written and fits in memory: its cache is warm already
        warm, rounds = (0, ctx.sizes.big_repeat) if env is big else (1, n)
        copies = _time_copies(ctx, env, warm, rounds)
        s_fork, s_cp = summary(forks), summary(copies)
        out[env.label] = {
            "env_bytes": env.nbytes,
            "env_files": env.files,
            "fork": s_fork,
            "fork_then_first_run_true": summary(fork_runs),
            "cp_a": s_cp,
            "fork_over_cp_p50": p50(s_fork) / p50(s_cp),
        }
    for env in (small, big):
        ctx.rows += _fork_rows(ctx, env, out[env.label], env is big)
    out["create_big_env_s"] = big.create_s
    out["write_big_env_source_s"] = big.write_s
    ctx.rows.append(
        Row(
            SECTION,
            f"  (one-time) Sandbox.create(files=...) of the {fmt_bytes(big.nbytes)} env",
            fmt_ms(big.create_s * 1e3),
            "",
            f"writing its source tree {fmt_ms(big.write_s * 1e3)}",
            fmt_ratio(big.create_s / big.write_s),
        )
    )
    ctx.results["fork"] = out


def _fork_rows(ctx: Context, env: Env, found: dict[str, Any], targeted: bool) -> list[Row]:
    """An env's fork rows; `targeted`: the fork latency target is checked on this one."""
    s_fork, s_run, s_cp = found["fork"], found["fork_then_first_run_true"], found["cp_a"]
    ratio = found["fork_over_cp_p50"]
    target, verdict = "", ""
    if targeted:
        ok = p50(s_fork) < 2 and ratio < 1e-3
        target = "p50 < 2 ms; < 1/1000 of cp"
        verdict = ctx.target(
            "fork latency",
            ok,
            f"p50 {p50(s_fork):.3f} ms, {ratio:.2e} of cp -a",
            "p50 < 2 ms and < 1/1000 of a full copy",
        )
    return [
        Row(
            SECTION,
            f"Sandbox.fork, {fmt_bytes(env.nbytes)} env ({env.files} files)",
            fmt_ms(p50(s_fork)),
            fmt_ms(p90(s_fork)),
            f"cp -a (warm cache, n={s_cp['n']}) {fmt_ms(p50(s_cp))}",
            fmt_ratio(ratio),
            target,
            verdict,
        ),
        Row(
            SECTION,
            f'  fork + first run("true"), {fmt_bytes(env.nbytes)} env',
            fmt_ms(p50(s_run)),
            fmt_ms(p90(s_run)),
            f"cp -a {fmt_ms(p50(s_cp))}",
            fmt_ratio(p50(s_run) / p50(s_cp)),
        ),
    ]


def _time_squashes(store: LayerStore, big: Env, rounds: int) -> tuple[list[float], list[int], int]:
    """Checkpoints that cross max_stack=2, each of a fresh fork of the big env: (their
    times, the disk each added, the flat layer's reported size)."""
    times, new_disk = [], []
    reported = 0
    for _ in range(rounds):
        sb = Sandbox.fork(store, big.base)
        must(sb.run("echo a > squash_a"), "turn")
        sb.checkpoint()  # stack of 2: no squash yet
        must(sb.run("echo b > squash_b"), "turn")
        os.sync()
        before = disk_usage(store.path)
        t, cid = timed(sb.checkpoint)
        after = disk_usage(store.path)
        sb.close()
        flat = store.layer(cid).flat
        if flat is None:
            raise BenchError("max_stack=2: the third layer did not squash")
        reported = store.layer(flat).size
        times.append(t)
        new_disk.append(after - before)
    return times, new_disk, reported


def bench_squash(ctx: Context, big: Env, seal_p50_ms: float) -> None:
    """The checkpoint that crosses max_stack merges the whole stack (hard links)."""
    ctx.log("3/7 squash of the big env")
    found: dict[str, Any] = {}
    for durable in (False, True):
        store = LayerStore(big.store.path, durable=durable, max_stack=2)
        times, new_disk, reported = _time_squashes(store, big, ctx.sizes.big_repeat)
        s = summary(times)
        key = "durable" if durable else "not_durable"
        found[key] = {
            "checkpoint_that_squashes": s,
            "new_disk_bytes": new_disk,
            "flat_layer_reported_size": reported,
        }
        ctx.rows.append(
            Row(
                SECTION,
                f"checkpoint that squashes (every max_stack turns), {fmt_bytes(big.nbytes)} "
                f"env, durable={durable}",
                fmt_ms(p50(s)),
                fmt_ms(p90(s)),
                f"plain seal {fmt_ms(seal_p50_ms)}",
                fmt_ratio(p50(s) / seal_p50_ms),
                "",
                f"new disk {fmt_bytes(max(new_disk))}; Layer.size says {fmt_bytes(reported)}",
            )
        )
    found["env_files"] = big.files
    ctx.results["squash_big_env"] = found
