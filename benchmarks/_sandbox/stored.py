"""Section 4: stored bytes against written bytes.

A turn that writes new files should store what it wrote (and as a plain directory
would hold it: many small files round up to blocks either way), while a one-byte
change to a big file of a lower layer stores the whole file, since overlayfs copies
it up; the time of that copy-up is set beside the same write once the file is up.
"""

import os
import subprocess
from typing import Any

from _stats import fmt_bytes, fmt_ms, fmt_ratio, p50, p90, summary, timed
from sprout.durable import flush_tree
from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.storefs.extents import disk_usage

from .common import BenchError, Context, Row, must, new_store, remove
from .disk import fsync_fresh_file, syncfs

SECTION = "4. stored bytes"


def _plain_disk(ctx: Context, command: str) -> int:
    """Disk that `command`'s files take in a plain directory, outside any sandbox."""
    plain_dir = ctx.path("plain")
    os.makedirs(plain_dir)
    subprocess.run(["/bin/bash", "-c", command], cwd=plain_dir, check=True)
    used = disk_usage(plain_dir)
    remove(plain_dir)
    return used


def _new_files(ctx: Context, store: LayerStore, base: str, command: str) -> dict[str, Any]:
    """Rounds of a turn of new files: its run, seal and stored size, its layer's flush,
    the same turn made durable with one syncfs instead, and an fsync of as many bytes
    (series by name), and the disk its files take in a plain directory (plain_disk)."""
    sz = ctx.sizes
    written = sz.new_files * sz.new_file_size
    found: dict[str, Any] = {"plain_disk": _plain_disk(ctx, command)}
    os.sync()
    series: dict[str, list[Any]] = {
        key: [] for key in ("stored", "seal", "flush", "fsync", "syncfs", "run")
    }
    for _ in range(sz.big_repeat):
        sb = Sandbox.fork(store, base)
        t_run, obs = timed(lambda sb=sb: sb.run(command))
        must(obs, "write new files")
        t_seal, cid = timed(sb.checkpoint)
        series["stored"].append(store.layer(cid).size)
        t_flush, _ = timed(lambda c=cid: flush_tree(store.diff_dir(c)))
        sb.close()
        # the same turn again, made durable with one syncfs instead
        sb = Sandbox.fork(store, base)
        must(sb.run(command), "write new files")
        sb.checkpoint()
        t_syncfs = syncfs(store.path)
        sb.close()
        t_fsync = fsync_fresh_file(ctx.path("fsync-baseline"), written)
        store.gc(keep=[base])
        series["run"].append(t_run)
        series["seal"].append(t_seal)
        series["flush"].append(t_flush)
        series["syncfs"].append(t_syncfs)
        series["fsync"].append(t_fsync)
    return found | series


def _small_files(ctx: Context, store: LayerStore, base: str) -> tuple[int, int]:
    """Many small files: the filesystem's block rounding, same as without a sandbox.
    (stored bytes, bytes of the same files in a plain directory)."""
    command = f"for i in $(seq 1 {ctx.sizes.small_files}); do printf '%1000s' '' > s_$i; done"
    plain = _plain_disk(ctx, command)
    sb = Sandbox.fork(store, base)
    must(sb.run(command), "write small files")
    stored = store.layer(sb.checkpoint()).size
    sb.close()
    store.gc(keep=[base])
    return stored, plain


def _copy_up(ctx: Context, store: LayerStore, base: str) -> dict[str, list[Any]]:
    """One byte of a big file that lives in a lower layer: overlayfs copies it up whole.
    Rounds of that write, the next byte's (the file is up already) and their seal; then
    the same write to a plain file outside any sandbox."""
    sz = ctx.sizes
    sb = Sandbox.fork(store, base)
    must(sb.run(f"head -c {sz.copyup_file} /dev/zero > big.bin"), "write big file")
    lower = sb.checkpoint()
    sb.close()
    os.sync()
    offset = sz.copyup_file // 2
    poke = f"printf x | dd of=big.bin bs=1 seek={offset} count=1 conv=notrunc status=none"
    poke_again = poke.replace(f"seek={offset}", f"seek={offset + 1}")
    found: dict[str, list[Any]] = {key: [] for key in ("stored", "run", "seal", "again")}
    for _ in range(sz.big_repeat):
        sb = Sandbox.fork(store, lower)
        t_run, obs = timed(lambda sb=sb: sb.run(poke))
        must(obs, "poke one byte")
        # the same write again: the file is in the upper layer now, nothing to copy
        t_again, obs = timed(lambda sb=sb: sb.run(poke_again))
        must(obs, "poke one more byte")
        found["again"].append(t_again)
        t_seal, cid = timed(sb.checkpoint)
        found["stored"].append(store.layer(cid).size)
        check = must(sb.run(f"od -An -c -j {offset} -N 1 big.bin"), "read back").output
        if "x" not in check:
            raise BenchError(f"the poked byte did not land: {check!r}")
        sb.close()
        store.gc(keep=[lower])
        found["run"].append(t_run)
        found["seal"].append(t_seal)
    found["plain"] = _plain_poke(ctx, poke)
    return found


def _plain_poke(ctx: Context, poke: str) -> list[float]:
    """Baseline: the same one-byte write to a plain file of the same size."""
    plain_big = ctx.path("big.bin")  # the name `poke` writes to, in ctx.root
    with open(plain_big, "wb") as handle:
        subprocess.run(
            ["head", "-c", str(ctx.sizes.copyup_file), "/dev/zero"], stdout=handle, check=True
        )
    os.sync()
    times = []
    for _ in range(ctx.sizes.big_repeat):
        t, _ = timed(lambda: subprocess.run(["/bin/bash", "-c", poke], cwd=ctx.root, check=True))
        times.append(t)
    os.unlink(plain_big)
    return times


def bench_stored(ctx: Context) -> None:
    """New files, many small files and a copy-up, on one store."""
    ctx.log("4/7 stored vs written bytes")
    sz = ctx.sizes
    store = new_store(ctx, "bytes", durable=False)
    sb = Sandbox.create(store)
    base = sb.parent
    sb.close()
    new_cmd = (
        f"for i in $(seq 1 {sz.new_files}); do "
        f"head -c {sz.new_file_size} /dev/zero > new_$i.bin; done"
    )
    new = _new_files(ctx, store, base, new_cmd)
    small_stored, small_plain = _small_files(ctx, store, base)
    copy_up = _copy_up(ctx, store, base)
    remove(store.path)
    results = _results(ctx, new, (small_stored, small_plain), copy_up)
    ctx.results["stored_bytes"] = results
    ctx.rows += _new_file_rows(ctx, results["new_files"], results["small_files"])
    ctx.rows += _copy_up_rows(results["copy_up"])


def _results(
    ctx: Context, new: dict[str, Any], small: tuple[int, int], copy_up: dict[str, list[Any]]
) -> dict[str, Any]:
    """The section's JSON: what each kind of turn wrote and stored, and its timings."""
    sz = ctx.sizes
    written = sz.new_files * sz.new_file_size
    small_written = sz.small_files * 1000
    stored, plain_disk = new["stored"], new["plain_disk"]
    return {
        "new_files": {
            "files": sz.new_files,
            "file_size": sz.new_file_size,
            "written_bytes": written,
            "stored_bytes": stored,
            "plain_dir_disk_bytes": plain_disk,
            "stored_over_written": max(stored) / written,
            "stored_over_plain_dir": max(stored) / plain_disk,
            "run": summary(new["run"]),
            "seal": summary(new["seal"]),
            "flush_tree": summary(new["flush"]),
            "syncfs_instead": summary(new["syncfs"]),
            "fsync_one_file_same_bytes": summary(new["fsync"]),
        },
        "small_files": {
            "files": sz.small_files,
            "file_size": 1000,
            "written_bytes": small_written,
            "stored_bytes": small[0],
            "plain_dir_disk_bytes": small[1],
            "stored_over_written": small[0] / small_written,
            "stored_over_plain_dir": small[0] / small[1],
        },
        "copy_up": {
            "lower_file_bytes": sz.copyup_file,
            "written_bytes": 1,
            "stored_bytes": copy_up["stored"],
            "stored_over_file_size": max(copy_up["stored"]) / sz.copyup_file,
            "run_poke_one_byte": summary(copy_up["run"]),
            "seal": summary(copy_up["seal"]),
            "run_poke_again_no_copy_up": summary(copy_up["again"]),
            "plain_poke_one_byte_outside_sandbox": summary(copy_up["plain"]),
        },
    }


def _new_file_rows(ctx: Context, new: dict[str, Any], small: dict[str, Any]) -> list[Row]:
    """The rows of the new-files turn (with its target) and of the small-files turn."""
    written, ratio_new = new["written_bytes"], new["stored_over_written"]
    s_seal, s_flush, s_run = new["seal"], new["flush_tree"], new["run"]
    s_syncfs, s_fsync = new["syncfs_instead"], new["fsync_one_file_same_bytes"]
    verdict = ctx.target(
        "stored/written, new files", ratio_new <= 1.05, f"{ratio_new:.4f}", "<= 1.05"
    )
    return [
        Row(
            SECTION,
            f"turn writes {new['files']} new files of {fmt_bytes(new['file_size'])}: "
            f"layer size / bytes written",
            f"{fmt_bytes(max(new['stored_bytes']))} / {fmt_bytes(written)}",
            "",
            f"same files in a plain dir: {fmt_bytes(new['plain_dir_disk_bytes'])} on disk",
            f"{ratio_new:.4f}",
            "<= 1.05",
            verdict,
        ),
        Row(
            SECTION,
            f"  seal of that {fmt_bytes(written)} layer (durable=False)",
            fmt_ms(p50(s_seal)),
            fmt_ms(p90(s_seal)),
            f"the turn itself {fmt_ms(p50(s_run))}",
            fmt_ratio(p50(s_seal) / p50(s_run)),
        ),
        Row(
            SECTION,
            f"  durability flush of that layer: flush_tree ({new['files']} files)",
            fmt_ms(p50(s_flush)),
            fmt_ms(p90(s_flush)),
            f"fsync of one {fmt_bytes(written)} file {fmt_ms(p50(s_fsync))}",
            fmt_ratio(p50(s_flush) / p50(s_fsync)),
        ),
        Row(
            SECTION,
            "  same turn made durable with one syncfs(2) instead",
            fmt_ms(p50(s_syncfs)),
            fmt_ms(p90(s_syncfs)),
            f"flush_tree {fmt_ms(p50(s_flush))}",
            fmt_ratio(p50(s_syncfs) / p50(s_flush)),
        ),
        Row(
            SECTION,
            f"turn writes {small['files']} files of 1000 B: layer size / bytes written",
            f"{fmt_bytes(small['stored_bytes'])} / {fmt_bytes(small['written_bytes'])}",
            "",
            f"same files in a plain dir: {fmt_bytes(small['plain_dir_disk_bytes'])}",
            f"{small['stored_over_written']:.3f}",
            "",
            f"fs blocks; vs plain dir {small['stored_over_plain_dir']:.3f}",
        ),
    ]


def _copy_up_rows(copy_up: dict[str, Any]) -> list[Row]:
    """The rows of the one-byte change to a big lower file: what it stores, what it takes."""
    s_run, s_again = copy_up["run_poke_one_byte"], copy_up["run_poke_again_no_copy_up"]
    s_seal, s_plain = copy_up["seal"], copy_up["plain_poke_one_byte_outside_sandbox"]
    file_bytes = copy_up["lower_file_bytes"]
    return [
        Row(
            SECTION,
            f"turn changes 1 byte of a {fmt_bytes(file_bytes)} lower file: stored",
            fmt_bytes(max(copy_up["stored_bytes"])),
            "",
            "bytes written: 1 B",
            f"{copy_up['stored_over_file_size']:.3f}x the file",
            "",
            "COPY-UP: whole file stored",
        ),
        Row(
            SECTION,
            "  that one-byte write (run, includes the copy-up)",
            fmt_ms(p50(s_run)),
            fmt_ms(p90(s_run)),
            f"next byte, file already up {fmt_ms(p50(s_again))}",
            fmt_ratio(p50(s_run) / p50(s_again)),
            "",
            f"outside a sandbox {fmt_ms(p50(s_plain))}",
        ),
        Row(
            SECTION,
            "  seal of that copied-up layer (durable=False)",
            fmt_ms(p50(s_seal)),
            fmt_ms(p90(s_seal)),
        ),
    ]
