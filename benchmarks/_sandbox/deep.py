"""Section 5: deep stacks. Reads through a deep mounted stack against a 1-deep one,
after a long chain of checkpoints (squashing bounds the mounted depth), and through
the deepest stack a store lets a sandbox mount (max_stack=300)."""

import os
from typing import Any

from _stats import fmt_ms, fmt_ratio, p50, p90, summary, timed
from sprout.sandbox import LayerStore, Sandbox

from .common import WARMUP, Context, Row, must, new_store, remove

SECTION = "5. deep stacks"


def _probe_command(lookups: int, loop: int) -> str:
    """One call: cold reads of files at the bottom, hot reads of one file, missing names.

    Timed inside the sandbox with bash's $EPOCHREALTIME (no process is started
    between the stamps: `read` and `[[ -e ]]` are builtins), so the call's own
    set-up is excluded and what remains is path lookup and open through the stack.
    """
    return (
        f"names=$(seq -f 'b%05g' 0 {lookups - 1}); read -r x < f0; "
        "t0=$EPOCHREALTIME; "
        "for n in $names; do read -r x < $n; done; "
        "t1=$EPOCHREALTIME; "
        f"for ((i=0;i<{loop};i++)); do read -r x < f0; done; "
        "t2=$EPOCHREALTIME; "
        f"for ((i=0;i<{loop};i++)); do [[ -e missing_$i ]]; done; "
        "t3=$EPOCHREALTIME; "
        'echo "$t0 $t1 $t2 $t3"'
    )


def _probe(ctx: Context, store: LayerStore, checkpoint: str) -> dict[str, Any]:
    """A fork of `checkpoint`: a whole call's wall time, and the probe's in-call times."""
    n = ctx.sizes.repeat
    command = _probe_command(ctx.sizes.lookup_files, ctx.sizes.lookup_loop)
    sb = Sandbox.fork(store, checkpoint)
    cat, cold, hot, missing = [], [], [], []
    for i in range(WARMUP + n):
        t, obs = timed(lambda: sb.run("cat f0"))
        must(obs, "cat f0")
        stamps = [float(x) for x in must(sb.run(command), "probe").output.split()]
        if i >= WARMUP:
            cat.append(t)
            cold.append(stamps[1] - stamps[0])
            hot.append(stamps[2] - stamps[1])
            missing.append(stamps[3] - stamps[2])
    sb.close()
    return {
        "mounted_depth": len(store.stack(checkpoint)),
        "depth": store.layer(checkpoint).depth,
        "per_call_cat": summary(cat),
        "cold_reads": summary(cold),
        "hot_reads": summary(hot),
        "missing_lookups": summary(missing),
    }


def _base_sandbox(ctx: Context) -> tuple[LayerStore, Sandbox]:
    """A store whose base holds the files the probe reads, and a sandbox over it."""
    source = ctx.path("deep-source")
    os.makedirs(source)
    for i in range(ctx.sizes.lookup_files):
        with open(os.path.join(source, f"b{i:05d}"), "w") as handle:
            handle.write("b\n")
    with open(os.path.join(source, "f0"), "w") as handle:
        handle.write("f0\n")
    store = new_store(ctx, "deep", durable=False)
    sb = Sandbox.create(store, files=source)
    remove(source)
    return store, sb


def _chain(
    sb: Sandbox, store: LayerStore, turns: int
) -> tuple[list[str], list[float], list[float]]:
    """`turns` turns of one new file each, sealed: (the checkpoints, the seal times of the
    ones that did not squash, of the ones that did)."""
    chain: list[str] = []
    chain_s: list[float] = []
    squash_s: list[float] = []
    for i in range(1, turns + 1):
        must(sb.run(f"echo {i} > t{i}"), "chain turn")
        t, cid = timed(sb.checkpoint)
        chain.append(cid)
        (squash_s if store.layer(cid).flat is not None else chain_s).append(t)
    sb.close()
    return chain, chain_s, squash_s


def _widest(store: LayerStore, base: str, depth: int) -> tuple[LayerStore, str]:
    """The deepest stack the store lets a sandbox mount (max_stack=300), `depth` deep."""
    wide = LayerStore(store.path, durable=False, max_stack=300)
    sb = Sandbox.fork(wide, base)
    deep_top = base
    for i in range(1, depth):
        must(sb.run(f"echo {i} > u{i}"), "deep turn")
        deep_top = sb.checkpoint()
    sb.close()
    return wide, deep_top


def bench_deep(ctx: Context) -> None:
    """The chain's seals, then the probe at depth 1, at the chain's top, at its deepest
    stack and at max_stack=300."""
    ctx.log("5/7 deep stacks")
    sz = ctx.sizes
    store, sb = _base_sandbox(ctx)
    base = sb.parent
    chain, chain_s, squash_s = _chain(sb, store, sz.chain)
    depths = [len(store.stack(c)) for c in chain]
    deepest = chain[max(range(len(chain)), key=lambda k: depths[k])]
    wide, deep_top = _widest(store, base, sz.deep_mount)
    probes = {
        "1": _probe(ctx, store, base),
        "top_of_chain": _probe(ctx, store, chain[-1]),
        "deepest_default": _probe(ctx, store, deepest),
        "deepest_max_stack_300": _probe(ctx, wide, deep_top),
    }
    remove(store.path)
    ctx.results["deep_stacks"] = {
        "chain_checkpoints": sz.chain,
        "max_stack": store.max_stack,
        "chain_seal": summary(chain_s),
        "chain_squash_seal": summary(squash_s) if squash_s else None,
        "squashes": len(squash_s),
        "mounted_depth_at_top": probes["top_of_chain"]["mounted_depth"],
        "max_mounted_depth_default": max(depths),
        "probes": probes,
        "lookup_files": sz.lookup_files,
        "lookup_loop": sz.lookup_loop,
    }
    ctx.rows.append(_chain_row(ctx, store.max_stack, chain_s, squash_s, max(depths)))
    ctx.rows += _probe_rows(ctx, probes)


def _chain_row(
    ctx: Context, max_stack: int, chain_s: list[float], squash_s: list[float], deepest: int
) -> Row:
    """The chain's seals, the squashing ones apart."""
    sz = ctx.sizes
    top_depth = ctx.results["deep_stacks"]["mounted_depth_at_top"]
    return Row(
        SECTION,
        f"{sz.chain} checkpoints, max_stack={max_stack}: seal p50 (squashing ones apart)",
        fmt_ms(p50(summary(chain_s))),
        fmt_ms(p90(summary(chain_s))),
        (
            f"{len(squash_s)} squashing seals: p50 {fmt_ms(p50(summary(squash_s)))}, "
            f"max {fmt_ms(max(squash_s) * 1e3)}"
            if squash_s
            else "no squash"
        ),
        "",
        "",
        f"mounted depth at turn {sz.chain}: {top_depth}; max {deepest}",
    )


def _probe_rows(ctx: Context, probes: dict[str, dict[str, Any]]) -> list[Row]:
    """Each deep probe's figures against the 1-deep stack's."""
    sz = ctx.sizes
    one = probes["1"]
    rows = []
    for key, label in (
        ("top_of_chain", f"turn {sz.chain} of the chain"),
        ("deepest_default", "deepest default stack"),
        ("deepest_max_stack_300", "max_stack=300 stack"),
    ):
        probe = probes[key]
        d = probe["mounted_depth"]
        metrics = [
            ("per_call_cat", 'per call: run("cat f0"), wall'),
            ("cold_reads", f"in call: {sz.lookup_files} cold reads of bottom files"),
            ("hot_reads", f"in call: {sz.lookup_loop}x read f0 (dcache hot)"),
            ("missing_lookups", f"in call: {sz.lookup_loop} lookups of missing names"),
        ]
        if d == 1:  # squashed right at the top: nothing to compare but the call itself
            metrics = metrics[:1]
        for metric, what in metrics:
            s, base_s = probe[metric], one[metric]
            rows.append(
                Row(
                    SECTION,
                    f"{label}, mounted depth {d}: {what}",
                    fmt_ms(p50(s)),
                    fmt_ms(p90(s)),
                    f"depth 1 {fmt_ms(p50(base_s))}",
                    fmt_ratio(p50(s) / p50(base_s)),
                )
            )
    return rows
