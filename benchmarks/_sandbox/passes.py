"""The order the sections run in: sections 0-3 on a pass's stores (the plain store's,
then the reflink store's), and the whole run around them."""

import os
from dataclasses import replace

from _stats import fmt_bytes, p50

from .append import bench_append
from .calls import bench_calls
from .checkpoint import bench_checkpoint
from .common import Context, build_env, remove
from .deep import bench_deep
from .floor import bench_floor
from .fork import bench_fork, bench_squash
from .network import bench_network
from .reflink import compare_stores, reflink_store_fs, skipped_row
from .stored import bench_stored
from .turn import bench_turn


def bench_store(ctx: Context) -> None:
    """Sections 1-3 on the stores of `ctx`: per call, checkpoint, fork, squash."""
    sizes = ctx.sizes
    bench_calls(ctx)
    ctx.log(f"building the environments: {fmt_bytes(sizes.small_env)}, {fmt_bytes(sizes.big_env)}")
    small = build_env(ctx, "small", "small", sizes.small_env)
    big = build_env(ctx, "big", "big", sizes.big_env)
    bench_floor(ctx, "after building the envs")
    bench_checkpoint(ctx, small, big)
    bench_fork(ctx, small, big)
    bench_squash(ctx, big, p50(ctx.results["checkpoint"]["seal_small_env"]))
    remove(big.store.path)
    remove(small.store.path)


def bench_reflink_store(ctx: Context, mount_point: str) -> Context:
    """Sections 0-3 again, with every store on the store filesystem at `mount_point`."""
    root = ctx.path("reflink")
    os.makedirs(root)
    reflink = replace(
        ctx,
        root=root,
        rows=[],
        results={},
        checks=[],
        against=None,
        store_fs=mount_point,
        log=lambda message: ctx.log(f"7/7 reflink store: {message}"),
    )
    bench_floor(reflink, "at the start")
    bench_store(reflink)
    return reflink


def bench_all(ctx: Context) -> None:
    """Every section, in the order their figures are best compared in: the floor first and
    last (it drifts as the filesystem fills), the reflink store's pass last but one."""
    bench_floor(ctx, "at the start")
    bench_turn(ctx)
    bench_store(ctx)
    bench_network(ctx)
    bench_stored(ctx)
    bench_deep(ctx)
    with reflink_store_fs(ctx) as (mount_point, skipped):
        if mount_point is None:
            ctx.log(f"reflink store rows skipped: {skipped}")
            bench_append(ctx, None, skipped)
            ctx.rows.append(skipped_row(skipped))
        else:
            ctx.log(f"reflink store: sprout's store filesystem at {mount_point}")
            reflink = bench_reflink_store(ctx, mount_point)
            bench_append(ctx, reflink, "")
            compare_stores(ctx, reflink)
    bench_floor(ctx, "at the end")
