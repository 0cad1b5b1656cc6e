"""Section 2: what a checkpoint costs.

The seal (`checkpoint()` on a durable=False store) after a small turn in a small and
in a big workdir, which should not differ: sealing renames, it copies nothing; the
durability flush (`flush_tree`, what a store without syncfs does) beside a plain fsync of
as many bytes; and a default durable checkpoint until it returns (sealed; its flush runs
beside the next turn, section 0 times it).
"""

import os
from dataclasses import dataclass, field
from typing import Any

from _stats import fmt_bytes, fmt_ms, fmt_ratio, p50, p90, summary, timed
from sprout.durable import flush_tree
from sprout.sandbox import LayerStore, Sandbox

from .common import WARMUP, BenchError, Context, Env, Row, must
from .disk import content_bytes, fsync_fresh_file

SECTION = "2. checkpoint"


@dataclass
class _Turns:
    """What the rounds of turns measured: seal times by sandbox (an env's label, or
    "durable"), and the small env's flushes beside fsyncs of as many bytes."""

    seals: dict[str, list[float]]
    flushes: list[float] = field(default_factory=list)
    fsyncs: list[float] = field(default_factory=list)
    turn_bytes: int = 0
    layer_disk: int = 0


def _time_turns(ctx: Context, small: Env, big: Env) -> _Turns:
    """One turn and its seal in each sandbox per round, so that drift in the machine hits
    all alike; the small env's layer is also flushed, beside an fsync of as many bytes."""
    n = ctx.sizes.repeat
    os.sync()
    found = _Turns({small.label: [], big.label: [], "durable": []})
    # the default store (durable=True) over the small env, for checkpoint() end to end
    durable = LayerStore(small.store.path, durable=True)
    boxes = {
        small.label: Sandbox.fork(small.store, small.base),
        big.label: Sandbox.fork(big.store, big.base),
        "durable": Sandbox.fork(durable, small.base),
    }
    for i in range(WARMUP + n):
        for label, sb in boxes.items():
            previous = sb.parent
            must(sb.run(f"echo turn {i} > turn_{i}.txt"), "small turn")
            t_seal, cid = timed(sb.checkpoint)
            if cid == previous:
                raise BenchError("checkpoint after a write returned the previous id")
            if i < WARMUP:
                continue
            found.seals[label].append(t_seal)
            if label == small.label:
                diff = small.store.diff_dir(cid)
                t_flush, _ = timed(lambda d=diff: flush_tree(d))
                found.turn_bytes = content_bytes(diff)
                found.layer_disk = small.store.layer(cid).size
                found.flushes.append(t_flush)
                found.fsyncs.append(fsync_fresh_file(ctx.path("fsync-baseline"), found.turn_bytes))
    for sb in boxes.values():
        sb.close()
    return found


def bench_checkpoint(ctx: Context, small: Env, big: Env) -> None:
    """Seal, flush and durable checkpoint, with the seal's targets."""
    ctx.log("2/7 checkpoint: seal and durability flush")
    found = _time_turns(ctx, small, big)
    s_small, s_big = summary(found.seals[small.label]), summary(found.seals[big.label])
    s_flush, s_fsync = summary(found.flushes), summary(found.fsyncs)
    s_durable = summary(found.seals["durable"])
    ratio = p50(s_big) / p50(s_small)
    turn_bytes, layer_disk = found.turn_bytes, found.layer_disk
    ctx.results["checkpoint"] = {
        "turn": "echo turn N > turn_N.txt (one new file in the workdir)",
        "turn_content_bytes": turn_bytes,
        "turn_layer_disk_bytes": layer_disk,
        "seal_small_env": s_small,
        "seal_big_env": s_big,
        "seal_ratio_big_over_small_p50": ratio,
        "flush_tree_small_turn": s_flush,
        "fsync_same_bytes": s_fsync,
        "durable_checkpoint_small_env": s_durable,
    }
    worst = max(p50(s_small), p50(s_big))
    ctx.target("seal latency", worst < 2, f"p50 {worst:.3f} ms (worse env)", "p50 < 2 ms")
    ctx.target("seal ratio big/small env", ratio < 1.2, f"{ratio:.3f}", "< 1.2")
    ctx.rows += _rows(ctx.results["checkpoint"], small, big)


def _rows(found: dict[str, Any], small: Env, big: Env) -> list[Row]:
    """The section's rows; the seal rows carry their targets' verdicts."""
    s_small, s_big = found["seal_small_env"], found["seal_big_env"]
    ratio = found["seal_ratio_big_over_small_p50"]
    s_flush, s_fsync = found["flush_tree_small_turn"], found["fsync_same_bytes"]
    s_durable = found["durable_checkpoint_small_env"]
    turn_bytes, layer_disk = found["turn_content_bytes"], found["turn_layer_disk_bytes"]
    return [
        Row(
            SECTION,
            f"seal (durable=False), {fmt_bytes(small.nbytes)} workdir",
            fmt_ms(p50(s_small)),
            fmt_ms(p90(s_small)),
            "",
            "",
            "p50 < 2 ms",
            "PASS" if p50(s_small) < 2 else "MISS",
        ),
        Row(
            SECTION,
            f"seal (durable=False), {fmt_bytes(big.nbytes)} workdir",
            fmt_ms(p50(s_big)),
            fmt_ms(p90(s_big)),
            f"seal, {fmt_bytes(small.nbytes)} workdir {fmt_ms(p50(s_small))}",
            fmt_ratio(ratio),
            "p50 < 2 ms; ratio < 1.2",
            "PASS" if p50(s_big) < 2 and ratio < 1.2 else "MISS",
        ),
        Row(
            SECTION,
            f"durability flush: flush_tree of that layer ({turn_bytes} B in files, "
            f"{fmt_bytes(layer_disk)} on disk)",
            fmt_ms(p50(s_flush)),
            fmt_ms(p90(s_flush)),
            f"fsync of a {turn_bytes} B file {fmt_ms(p50(s_fsync))}",
            fmt_ratio(p50(s_flush) / p50(s_fsync)),
        ),
        Row(
            SECTION,
            "checkpoint() with durable=True (the default), same turn: returned, sealed "
            "(its flush runs beside the next turn: section 0)",
            fmt_ms(p50(s_durable)),
            fmt_ms(p90(s_durable)),
            f"seal alone {fmt_ms(p50(s_small))}",
            fmt_ratio(p50(s_durable) / p50(s_small)),
        ),
    ]
