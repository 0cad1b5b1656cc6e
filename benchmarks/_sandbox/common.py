"""What every section of the sandbox benchmark shares: its sizes, its context (results,
table rows, targets) and the stores and environments it measures on."""

import argparse
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import _stats as stats
from sprout.sandbox import LayerStore, Observation, Sandbox
from sprout.sandbox.storefs import btrfs

from .disk import make_tree

WARMUP = 2
"""Untimed runs before each timed series (first calls build caches, fault pages in)."""


class BenchError(Exception):
    """A sandbox call that should have worked did not: the figures would mean nothing."""


@dataclass(frozen=True)
class Sizes:
    """What the benchmark builds; --quick shrinks everything for a smoke run."""

    repeat: int
    big_repeat: int
    small_env: int
    big_env: int
    new_files: int
    new_file_size: int
    small_files: int
    copyup_file: int
    chain: int
    deep_mount: int
    lookup_files: int
    lookup_loop: int
    quick: bool = False
    """--quick: a smoke run."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Sizes":
        if args.quick:
            return cls(
                repeat=args.repeat or 5,
                big_repeat=args.big_repeat or 2,
                small_env=2_000_000,
                big_env=int((args.big_gb if args.big_gb_given else 0.05) * 1e9),
                new_files=10,
                new_file_size=1_000_000,
                small_files=500,
                copyup_file=20_000_000,
                chain=120,
                deep_mount=40,
                lookup_files=200,
                lookup_loop=200,
                quick=True,
            )
        return cls(
            repeat=args.repeat or 15,
            big_repeat=args.big_repeat or 3,
            small_env=10_000_000,
            big_env=int(args.big_gb * 1e9),
            new_files=100,
            new_file_size=1_000_000,
            small_files=10_000,
            copyup_file=500_000_000,
            chain=500,
            deep_mount=300,
            lookup_files=1000,
            lookup_loop=1000,
        )


@dataclass
class Row:
    """One line of the results table."""

    section: str
    figure: str
    p50: str
    p90: str = ""
    baseline: str = ""
    ratio: str = ""
    target: str = ""
    result: str = ""


@dataclass
class Context:
    """One pass of the benchmark: where its stores live and what it has found so far."""

    root: str
    sizes: Sizes
    log: Callable[[str], None]
    rows: list[Row] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    mode: str | None = None
    against: str | None = None
    """Another sprout tree's src/ folder, timed beside this one (--against)."""
    store_fs: str | None = None
    """Mount point of sprout's store filesystem when this pass's stores live there (the
    reflink store); None: the stores are plain directories under `root`."""

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def target(self, name: str, ok: bool, measured: str, wanted: str) -> str:
        self.checks.append({"target": name, "wanted": wanted, "measured": measured, "pass": ok})
        return "PASS" if ok else "MISS"


def must(observation: Observation, what: str) -> Observation:
    """`observation`, if its command succeeded: a failed one would time an error path."""
    if observation.exit_code != 0:
        raise BenchError(
            f"{what}: exit code {observation.exit_code}: {observation.output.strip()[-500:]}"
        )
    return observation


def new_store(ctx: Context, name: str, **kwargs: Any) -> LayerStore:
    """A store at `ctx.path(name)`; on the reflink pass, linked into the store filesystem
    the way a run's `layers/` is (storefs.btrfs.place_store)."""
    path = ctx.path(name)
    if ctx.store_fs is not None:
        btrfs.place_store(path)
    store = LayerStore(path, mode=ctx.mode, place=False, **kwargs)  # placed above, or not
    if store.store_fs != ctx.store_fs:
        raise BenchError(f"{path}: layers on {store.store_fs}, expected {ctx.store_fs}")
    ctx.mode = store.mode
    return store


def remove(path: str) -> None:
    """Delete `path`; a store linked into the store filesystem goes with its layers, whose
    btrfs subvolumes `--one-file-system` would skip (nothing is mounted inside them)."""
    if os.path.islink(path):
        subprocess.run(["rm", "-rf", os.path.realpath(path)], check=True)
        os.unlink(path)
        return
    subprocess.run(["rm", "-rf", "--one-file-system", path], check=True)


def tmpfs_scratch() -> str | None:
    """A fresh directory on /dev/shm when that is tmpfs (for diagnostics only), else None."""
    shm = "/dev/shm"
    if not os.path.isdir(shm) or stats.filesystem_of(shm)["type"] != "tmpfs":
        return None
    return tempfile.mkdtemp(prefix="sprout-bench-", dir=shm)


@dataclass
class Env:
    """A sealed environment (a base layer) that the checkpoint and fork sections share."""

    label: str
    store: LayerStore
    base: str
    files: int
    nbytes: int
    create_s: float
    write_s: float


def build_env(ctx: Context, label: str, name: str, total: int) -> Env:
    """A store whose base layer holds `total` bytes of files, made by Sandbox.create (timed,
    beside the writing of its source tree)."""
    source = ctx.path(f"{name}-source")
    write_s, (files, nbytes) = stats.timed(lambda: make_tree(source, total))
    store = new_store(ctx, name, durable=False)
    create_s, sb = stats.timed(lambda: Sandbox.create(store, files=source))
    base = sb.parent
    sb.close()
    remove(source)
    return Env(label, store, base, files, nbytes, create_s, write_s)
