"""Section 6: a turn that appends 1 byte, then 1 MB, to a big file of a lower layer.

Its first write makes overlayfs copy the file up: the plain store copies its bytes,
the reflink store (sprout's btrfs store filesystem) clones its extents. Write + seal
time and stored bytes on each store, rounds interleaved between stores and sizes.
"""

import os
from typing import Any

import _stats as stats
from _stats import fmt_bytes, fmt_ms, fmt_ratio, p50, p90, summary, timed
from sprout.durable import flush_tree
from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.storefs.extents import disk_usage

from .common import BenchError, Context, Row, must, new_store, remove

SECTION = "6. append to a big lower file"

METADATA_ALLOWANCE = 16 << 10
"""The "metadata" in the 1-byte append's target (one block + metadata): one btrfs
metadata node, at mkfs.btrfs's default node size."""

APPENDS = (1, 1_000_000)
"""Bytes that the turns of section 6 append to the big lower file."""

SERIES = ("write", "seal", "write_seal", "flush", "stored")
"""What each append round records, per store and size."""


def exclusive_bytes(store: LayerStore, layer_id: str) -> int | None:
    """What btrfs itself says a sealed layer of a capped store holds that nothing else
    shares (`sprout.sandbox.storefs.quota.exclusive_bytes`); None on a store whose layers are not
    subvolumes."""
    if not store.capped:
        return None
    from sprout.sandbox.storefs.quota import exclusive_bytes as qgroup_exclusive

    return qgroup_exclusive(os.path.realpath(store.diff_dir(layer_id)))


def _lowers(passes: dict[str, Context]) -> dict[str, tuple[LayerStore, str]]:
    """On each pass's store, a layer holding the big file: (the store, that layer)."""
    lowers: dict[str, tuple[LayerStore, str]] = {}
    for label, pass_ctx in passes.items():
        store = new_store(pass_ctx, "append", durable=False)
        sb = Sandbox.create(store)
        must(
            sb.run(f"head -c {pass_ctx.sizes.copyup_file} /dev/zero > big.bin"),
            "write the big file",
        )
        lowers[label] = (store, sb.checkpoint())
        sb.close()
    return lowers


def _append_once(store: LayerStore, lower: str, n: int, size: int) -> dict[str, Any]:
    """One turn appending `n` bytes to the `size`-byte file of `lower`: its timings and
    what its layer stores, by three counts."""
    os.sync()  # the copies of the round before are on disk, not in this timing
    sb = Sandbox.fork(store, lower)
    t_write, obs = timed(lambda: sb.run(f"head -c {n} /dev/zero >> big.bin"))
    must(obs, f"append {n} B")
    t_seal, cid = timed(sb.checkpoint)
    diff = store.diff_dir(cid)
    t_flush, _ = timed(lambda: flush_tree(diff))
    seen = must(sb.run("stat -c %s big.bin"), "size of the big file").output.strip()
    sb.close()
    if seen != str(size + n):
        raise BenchError(f"after appending {n} B the big file has {seen} B")
    found: dict[str, Any] = {"write": t_write, "seal": t_seal, "write_seal": t_write + t_seal}
    found["flush"] = t_flush
    found["stored"] = {
        "layer_size_at_seal": store.layer(cid).size,
        "owned_after_flush": disk_usage(diff),
        "exclusive_with_metadata": exclusive_bytes(store, cid),
    }
    store.gc(keep=[lower])
    return found


def _results(
    ctx: Context,
    lowers: dict[str, tuple[LayerStore, str]],
    series: dict[tuple[str, int], dict[str, list[Any]]],
) -> dict[str, Any]:
    """The section's JSON: each store's filesystem and each append's summaries."""
    results: dict[str, Any] = {
        "lower_file_bytes": ctx.sizes.copyup_file,
        "rounds": ctx.sizes.big_repeat,
        "seal_durable": False,
    }
    for label, (store, _lower) in lowers.items():
        results[label] = {
            "store_filesystem": stats.filesystem_of(os.path.realpath(store.path)),
            "block_bytes": os.statvfs(os.path.realpath(store.path)).f_bsize,
            "capped": store.capped,
        }
        for n in APPENDS:
            found = series[label, n]
            results[label][f"append_{n}_B"] = {
                "write": summary(found["write"]),
                "seal": summary(found["seal"]),
                "write_seal": summary(found["write_seal"]),
                "flush_tree": summary(found["flush"]),
                "stored": {key: [s[key] for s in found["stored"]] for key in found["stored"][0]},
            }
        remove(store.path)
    return results


def bench_append(ctx: Context, reflink: Context | None, skipped: str) -> None:
    """Appends on the plain store and, when there is one, the reflink store (`skipped`
    says why not). Rounds alternate between stores and sizes, so drift in the machine
    hits all alike."""
    ctx.log("6/7 appends to a big lower file, on both stores")
    passes = {"plain": ctx} if reflink is None else {"plain": ctx, "reflink": reflink}
    lowers = _lowers(passes)
    series: dict[tuple[str, int], dict[str, list[Any]]] = {
        (label, n): {key: [] for key in SERIES} for label in passes for n in APPENDS
    }
    for _ in range(ctx.sizes.big_repeat):
        for n in APPENDS:
            for label, (store, lower) in lowers.items():
                found = _append_once(store, lower, n, ctx.sizes.copyup_file)
                for key in SERIES:
                    series[label, n][key].append(found[key])
    results = _results(ctx, lowers, series)
    for n in APPENDS:
        ctx.rows += _plain_append_rows(results, n)
        if reflink is not None:
            ctx.rows += _reflink_append_rows(ctx, results, n)
    if reflink is None:
        results["reflink"] = {"skipped": skipped}
        ctx.rows.append(
            Row(SECTION, "reflink store: append rows", "", result=f"SKIPPED: {skipped}")
        )
    ctx.results["append_to_big_lower_file"] = results


def _append_figure(results: dict[str, Any], label: str, n: int) -> str:
    fs_type = results[label]["store_filesystem"]["type"]
    return (
        f"{label} store ({fs_type}): append {fmt_bytes(n)} to a "
        f"{fmt_bytes(results['lower_file_bytes'])} lower file, write + seal"
    )


def _plain_append_rows(results: dict[str, Any], n: int) -> list[Row]:
    found = results["plain"][f"append_{n}_B"]
    stored = max(found["stored"]["owned_after_flush"])
    return [
        Row(
            SECTION,
            _append_figure(results, "plain", n),
            fmt_ms(p50(found["write_seal"])),
            fmt_ms(p90(found["write_seal"])),
            f"the write alone {fmt_ms(p50(found['write']))}",
            fmt_ratio(p50(found["write_seal"]) / p50(found["write"])),
        ),
        Row(
            SECTION,
            "  stored: the layer's blocks",
            fmt_bytes(stored),
            "",
            f"bytes written: {fmt_bytes(n)}",
            f"{stored / results['lower_file_bytes']:.3f}x the file",
        ),
        Row(
            SECTION,
            "  durability flush of that layer (what durable=True adds)",
            fmt_ms(p50(found["flush_tree"])),
            fmt_ms(p90(found["flush_tree"])),
        ),
    ]


def _reflink_targets(ctx: Context, results: dict[str, Any], n: int) -> dict[str, tuple[str, str]]:
    """The reflink store's targets of one append, each (wanted, verdict) by the figure it
    is on: 1 byte: write + seal <= 50 ms, and btrfs's own count of the layer's bytes (data
    and metadata) <= one block + one metadata node; 1 MB: the layer's data <= 1 MB + one
    block. A figure without a target has ("", "")."""
    found = results["reflink"][f"append_{n}_B"]
    block = results["reflink"]["block_bytes"]
    none = ("", "")
    if n != 1:
        owned = max(found["stored"]["owned_after_flush"])
        wanted = f"<= {n} + {block} B"
        name = f"reflink store: {fmt_bytes(n)} append, stored bytes"
        owned_target = (wanted, ctx.target(name, owned <= n + block, f"{owned} B", wanted))
        return {"write_seal": none, "owned": owned_target, "exclusive": none}
    p50_ws = p50(found["write_seal"])
    wanted_ws = "p50 <= 50 ms"
    ws = ctx.target(
        "reflink store: 1-byte append, write + seal",
        p50_ws <= 50,
        f"p50 {p50_ws:.1f} ms",
        wanted_ws,
    )
    exclusive = max(found["stored"]["exclusive_with_metadata"])
    wanted_excl = f"<= {block} + {METADATA_ALLOWANCE} B"
    excl = ctx.target(
        "reflink store: 1-byte append, stored bytes with metadata",
        exclusive <= block + METADATA_ALLOWANCE,
        f"{exclusive} B",
        wanted_excl,
    )
    return {"write_seal": (wanted_ws, ws), "owned": none, "exclusive": (wanted_excl, excl)}


def _reflink_append_rows(ctx: Context, results: dict[str, Any], n: int) -> list[Row]:
    """The reflink store's rows of one append, against the plain store's."""
    found, plain = results["reflink"][f"append_{n}_B"], results["plain"][f"append_{n}_B"]
    owned = max(found["stored"]["owned_after_flush"])
    exclusive = max(found["stored"]["exclusive_with_metadata"])
    recorded = found["stored"]["layer_size_at_seal"]
    plain_stored = max(plain["stored"]["owned_after_flush"])
    s_ws, s_flush, plain_flush = found["write_seal"], found["flush_tree"], plain["flush_tree"]
    targets = _reflink_targets(ctx, results, n)
    return [
        Row(
            SECTION,
            _append_figure(results, "reflink", n),
            fmt_ms(p50(s_ws)),
            fmt_ms(p90(s_ws)),
            f"plain store {fmt_ms(p50(plain['write_seal']))}",
            fmt_ratio(p50(s_ws) / p50(plain["write_seal"])),
            *targets["write_seal"],
        ),
        Row(
            SECTION,
            "  stored: the layer's blocks (extents it alone holds)",
            f"{owned} B",
            "",
            f"plain store {fmt_bytes(plain_stored)}",
            fmt_ratio(owned / plain_stored),
            *targets["owned"],
        ),
        Row(
            SECTION,
            "  stored with its metadata: btrfs qgroup exclusive bytes of its subvolume",
            f"{exclusive} B",
            "",
            "",
            "",
            *targets["exclusive"],
        ),
        Row(
            SECTION,
            "  Layer.size recorded at the seal (durable=False: before writeback)",
            f"{max(recorded)} B",
            "",
            f"the layer's blocks {owned} B",
            "",
            "",
            "the same" if recorded == found["stored"]["owned_after_flush"] else "differs",
        ),
        Row(
            SECTION,
            "  durability flush of that layer (what durable=True adds)",
            fmt_ms(p50(s_flush)),
            fmt_ms(p90(s_flush)),
            f"plain store {fmt_ms(p50(plain_flush))}",
            fmt_ratio(p50(s_flush) / p50(plain_flush)),
        ),
    ]
