"""Section 0: what the store's filesystem charges for a new inode, right now.

A seal makes about three (the metadata file, the hold file, the next upper directory),
and overlayfs makes a few more in its workdir at every mount, so this floor shows
through in the seal and per-call figures. It is measured at the start, after the
environments are built and at the end, as the filesystem fills and ages.
"""

import os
from typing import Any

from _stats import fmt_ms, fmt_ratio, p50, p90, summary, timed

from .common import Context, Row, remove, tmpfs_scratch

SECTION = "0. filesystem floor"


def _metadata_series(directory: str, n: int) -> tuple[list[float], list[float]]:
    """Times of n mkdirs and n file creations in `directory` (all made, then all removed)."""
    made, created = [], []
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for i in range(n):
        path = os.path.join(directory, f"floor-d{i}")
        made.append(timed(lambda p=path: os.mkdir(p))[0])
        path = os.path.join(directory, f"floor-f{i}")
        created.append(timed(lambda p=path: os.close(os.open(p, flags, 0o644)))[0])
    for i in range(n):
        os.rmdir(os.path.join(directory, f"floor-d{i}"))
        os.unlink(os.path.join(directory, f"floor-f{i}"))
    return made, created


def bench_floor(ctx: Context, when: str) -> None:
    """mkdir and file creation in the store directory, beside the same on tmpfs."""
    n = ctx.sizes.repeat * 2
    made, created = _metadata_series(ctx.store_fs or ctx.root, n)
    found: dict[str, Any] = {"mkdir": summary(made), "create": summary(created)}
    scratch = tmpfs_scratch()
    if scratch is not None:
        try:
            t_made, t_created = _metadata_series(scratch, n)
        finally:
            remove(scratch)
        found["tmpfs_mkdir"] = summary(t_made)
        found["tmpfs_create"] = summary(t_created)
    ctx.results.setdefault("fs_floor", {})[when] = found
    for key, what in (("mkdir", "mkdir"), ("create", "create a file")):
        s = found[key]
        base = found.get(f"tmpfs_{key}")
        ctx.rows.append(
            Row(
                SECTION,
                f"{what} in the store dir ({when})",
                fmt_ms(p50(s)),
                fmt_ms(p90(s)),
                f"same on tmpfs {fmt_ms(p50(base))}" if base else "",
                fmt_ratio(p50(s) / p50(base)) if base else "",
            )
        )
