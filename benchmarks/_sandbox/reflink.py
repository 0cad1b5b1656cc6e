"""Section 7 and the reflink store it runs on: sprout's own store filesystem (btrfs, where
overlayfs's copy-up clones extents), made for the benchmark and taken down after it, and
the figures of sections 0-3 measured on it set beside the plain store's."""

import contextlib
import os
import subprocess
from collections.abc import Iterator

import _stats as stats
from _stats import fmt_bytes, fmt_ms, fmt_ratio, p50, p90
from sprout.sandbox import SandboxError
from sprout.sandbox.storefs import btrfs
from sprout.sandbox.storefs.settings import SIZE, SWITCH

from .common import Context, Row

SECTION = "7. reflink store vs plain"

REFLINK_IMAGE_SIZE = "8G"
"""SPROUT_STORE_SIZE of the benchmark's own store filesystem: a bound, not a cost (the
image is sparse and holds what the reflink pass writes, about 2.6 GB at default sizes)."""


@contextlib.contextmanager
def reflink_store_fs(ctx: Context) -> Iterator[tuple[str | None, str]]:
    """sprout's store filesystem as a run as root makes it, but under this benchmark's own
    SPROUT_CACHE and bounded: (its mount point, "") or (None, why the reflink rows are
    skipped). However the benchmark ends, it is unmounted on the way out, the loop device
    of its image detached, and the settings put back."""
    settings = {
        "SPROUT_CACHE": ctx.path("cache"),
        SIZE: REFLINK_IMAGE_SIZE,
        SWITCH: "auto",
    }
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    root = btrfs.store_fs_root()
    try:
        mount_point, why = None, ""
        placement = btrfs.plan(ctx.path("reflink"))
        if placement.clone.clones:
            why = f"{placement.clone.detail}: the plain store is a reflink store already"
        elif not placement.own_fs:
            why = placement.note
        else:
            try:
                mount_point = btrfs.mount(root)
            except SandboxError as error:
                why = str(error)
        yield mount_point, why
    finally:
        _detach(root)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _detach(root: str) -> None:
    """Unmount the store filesystem under `root` (lazily if something still holds it) and
    detach the loop devices backed by its image."""
    mount_point = os.path.join(root, "mnt")
    if os.path.ismount(mount_point) and subprocess.run(["umount", mount_point]).returncode:
        subprocess.run(["umount", "--lazy", mount_point], check=True)
    image = os.path.join(root, "btrfs.img")
    if os.path.exists(image):
        listed = subprocess.run(
            ["losetup", "--associated", image, "--noheadings", "--output", "NAME"],
            capture_output=True,
            text=True,
            check=True,
        )
        for device in listed.stdout.split():
            subprocess.run(["losetup", "--detach", device], check=True)


REFLINK_FIGURES = (
    (("fs_floor", "at the start", "mkdir"), "mkdir in the store dir (at the start)", None),
    (("per_call", "sandbox_run_true"), 'sb.run("true")', "per-call overhead"),
    (("checkpoint", "seal_small_env"), "seal (durable=False), {small} workdir", "seal latency"),
    (
        ("checkpoint", "seal_big_env"),
        "seal (durable=False), {big} workdir",
        "seal ratio big/small env",
    ),
    (
        ("checkpoint", "durable_checkpoint_small_env"),
        "checkpoint() with durable=True, {small} workdir",
        None,
    ),
    (("fork", "small", "fork"), "Sandbox.fork, {small} env", None),
    (("fork", "big", "fork"), "Sandbox.fork, {big} env", "fork latency"),
    (("fork", "big", "fork_then_first_run_true"), '  fork + first run("true"), {big} env', None),
    (
        ("squash_big_env", "not_durable", "checkpoint_that_squashes"),
        "checkpoint that squashes, {big} env, durable=False",
        None,
    ),
    (
        ("squash_big_env", "durable", "checkpoint_that_squashes"),
        "checkpoint that squashes, {big} env, durable=True",
        None,
    ),
)
"""Section 7: (where in the results, the row, the target it carries) of the figures of
sections 0-3 that the reflink pass measures again."""


def compare_stores(ctx: Context, reflink: Context) -> None:
    """Section 7: the reflink pass's figures beside the plain store's, its targets checked
    as the plain store's are (its whole results go to the JSON)."""
    sizes = {"small": fmt_bytes(ctx.sizes.small_env), "big": fmt_bytes(ctx.sizes.big_env)}
    checks = {check["target"]: check for check in reflink.checks}
    for keys, label, target in REFLINK_FIGURES:
        mine, plain = reflink.results, ctx.results
        for key in keys:
            mine, plain = mine[key], plain[key]
        check = checks.get(target) if target else None
        ctx.rows.append(
            Row(
                SECTION,
                label.format(**sizes),
                fmt_ms(p50(mine)),
                fmt_ms(p90(mine)),
                f"plain store {fmt_ms(p50(plain))}",
                fmt_ratio(p50(mine) / p50(plain)),
                f"{target}: {check['wanted']}" if check else "",
                ("PASS" if check["pass"] else "MISS") if check else "",
            )
        )
    ctx.checks += [{**c, "target": f"reflink store: {c['target']}"} for c in reflink.checks]
    ctx.results["reflink_store"] = {
        "store_filesystem": stats.filesystem_of(reflink.store_fs or ""),
        "image_size": REFLINK_IMAGE_SIZE,
        **reflink.results,
    }


def skipped_row(why: str) -> Row:
    """Section 7's one row where there is no reflink store to measure."""
    return Row(SECTION, "reflink store", "", result=f"SKIPPED: {why}")
