"""Sandbox benchmark: what a shell call, a checkpoint and a fork cost, beside their baselines.

Run it with `sprout bench sandbox [options]` (or `make bench`). Every figure is
measured in one process, repeated, and reported as a median (p50) and p90
beside a baseline measured in the same run:

1. per-call overhead: `sb.run("true")` vs `subprocess.run(["true"])`, and the
   cost of the jail: the same call without seccomp and without cgroups (as a
   machine lacking them runs it), and, with `--against SRC`, the same call of
   another sprout tree (say the commit before the jail) in the same run;
2. checkpoint: the seal (`checkpoint()` on a durable=False store) after a small
   turn in a 10 MB vs a 2 GB workdir, the durability flush (`flush_tree`) vs a
   plain fsync of as many bytes, and a default durable checkpoint end to end;
3. fork: `Sandbox.fork` (and fork + first call) vs `cp -a` of the environment,
   and the squash that sealing does every `max_stack` turns;
4. stored bytes vs written bytes: 100 MB of new files, and a one-byte change to
   a 500 MB file of a lower layer (overlayfs copies the whole file up);
5. deep stacks: reads through a 100- and 300-deep mounted stack vs a 1-deep one,
   after 500 checkpoints (squashing bounds the mounted depth);
6. a turn that appends 1 byte, then 1 MB, to a 500 MB file of a lower layer, on the
   plain store and on the reflink store (sprout's btrfs store filesystem, where the
   copy-up clones extents), rounds interleaved: write + seal time and stored bytes;
7. the per-call, seal, fork and squash figures of 1-3 again on the reflink store,
   against the plain store's;
8. the network (root): a call under `public` vs one under `none`, each policy's network
   coming up (what every fork pays), and a 100 MB download through the stack vs the same
   program's on the host, all in namespaces the benchmark makes (sandbox_network.py).

The plain store is a `LayerStore` in the store directory, as a run's layers are
with `SPROUT_STORE_FS=off`. As root, where that directory's filesystem cannot clone,
the reflink store is sprout's own store filesystem, made under this benchmark's own
`SPROUT_CACHE` (an 8 GiB sparse image), unmounted and its loop device detached at
the end; rootless, without btrfs, or where the directory clones already, rows 6-7
of the reflink store say why they were skipped.

Results go to a table on stdout and to JSON (`--out`). The stores live in a
temporary directory on the filesystem of the current directory (or `--dir`),
which is deleted at the end.
"""

import argparse
import contextlib
import ctypes
import datetime
import hashlib
import json
import os
import shlex
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import _stats as stats
import sandbox_network
import sprout.sandbox
from sprout.durable import flush_tree
from sprout.sandbox import LayerStore, Observation, Sandbox, SandboxError
from sprout.sandbox.storefs import btrfs
from sprout.sandbox.storefs.extents import disk_usage

summary = stats.summary
timed = stats.timed
fmt_ms = stats.fmt_ms
fmt_bytes = stats.fmt_bytes
fmt_ratio = stats.fmt_ratio

WARMUP = 2
"""Untimed runs before each timed series (first calls build caches, fault pages in)."""

ENV_FILE_BYTES = 128 * 1024
"""Environments are trees of 128 KiB files, 128 per directory (2 GB: about 15,000 files)."""


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


# --------------------------------------------------------------------------- helpers


def must(observation: Observation, what: str) -> Observation:
    if observation.exit_code != 0:
        raise BenchError(
            f"{what}: exit code {observation.exit_code}: {observation.output.strip()[-500:]}"
        )
    return observation


def make_tree(path: str, total: int, file_bytes: int = ENV_FILE_BYTES) -> tuple[int, int]:
    """Write `total` bytes as a tree of `file_bytes` files; return (files, bytes) written.

    The bytes are a repeated pattern (fast to write, not sparse: every block is
    really allocated), slightly different per file so no two files are equal.
    """
    pattern = (bytes(range(256)) * (file_bytes // 256 + 1))[:file_bytes]
    count = max(1, total // file_bytes)
    os.makedirs(path)
    for i in range(count):
        directory = os.path.join(path, f"d{i // 128:04d}")
        if i % 128 == 0:
            os.makedirs(directory)
        with open(os.path.join(directory, f"f{i:06d}.bin"), "wb") as handle:
            handle.write(i.to_bytes(8, "little") + pattern[8:])
    return count, count * file_bytes


def content_bytes(root: str) -> int:
    """Sum of the sizes of the regular files under `root` (what a turn's files hold)."""
    total = 0
    for directory, _dirnames, filenames in os.walk(root):
        for name in filenames:
            st = os.lstat(os.path.join(directory, name))
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def fsync_fresh_file(path: str, nbytes: int) -> float:
    """Write `nbytes` to a new file (untimed), then time one fsync of it."""
    chunk = b"x" * min(max(nbytes, 1), 1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        left = nbytes
        while left > 0:
            left -= os.write(fd, chunk[:left])
        start = time.perf_counter()
        os.fsync(fd)
        return time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(path)


_libc: ctypes.CDLL | None = None


def syncfs(path: str) -> float:
    """Time one syncfs(2) of the filesystem holding `path` (flushes the whole filesystem)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        start = time.perf_counter()
        if _libc.syncfs(fd) != 0:
            raise OSError(ctypes.get_errno(), "syncfs")
        return time.perf_counter() - start
    finally:
        os.close(fd)


def p50(s: dict[str, Any]) -> float:
    return float(s["p50_ms"])


def p90(s: dict[str, Any]) -> float:
    return float(s["p90_ms"])


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


# --------------------------------------------------------------------------- 0. the floor


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


def _tmpfs_scratch() -> str | None:
    """A fresh directory on /dev/shm when that is tmpfs (for diagnostics only), else None."""
    shm = "/dev/shm"
    if not os.path.isdir(shm) or stats.filesystem_of(shm)["type"] != "tmpfs":
        return None
    return tempfile.mkdtemp(prefix="sprout-bench-", dir=shm)


def bench_floor(ctx: Context, when: str) -> None:
    """What the store's filesystem charges for a new inode, right now.

    A seal makes about three (the metadata file, the hold file, the next upper
    directory), and overlayfs makes a few more in its workdir at every mount,
    so this floor shows through in the seal and per-call figures.
    """
    n = ctx.sizes.repeat * 2
    made, created = _metadata_series(ctx.store_fs or ctx.root, n)
    found: dict[str, Any] = {"mkdir": summary(made), "create": summary(created)}
    scratch = _tmpfs_scratch()
    if scratch is not None:
        try:
            t_made, t_created = _metadata_series(scratch, n)
        finally:
            remove(scratch)
        found["tmpfs_mkdir"], found["tmpfs_create"] = summary(t_made), summary(t_created)
    ctx.results.setdefault("fs_floor", {})[when] = found
    section = "0. filesystem floor"
    for key, what in (("mkdir", "mkdir"), ("create", "create a file")):
        s = found[key]
        base = found.get(f"tmpfs_{key}")
        ctx.rows.append(
            Row(
                section,
                f"{what} in the store dir ({when})",
                fmt_ms(p50(s)),
                fmt_ms(p90(s)),
                f"same on tmpfs {fmt_ms(p50(base))}" if base else "",
                fmt_ratio(p50(s) / p50(base)) if base else "",
            )
        )


# --------------------------------------------------------------------------- 1. per call


AGAINST_SCRIPT = r"""
import json, sys, tempfile, time
from sprout.sandbox import LayerStore, Sandbox
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


def _jail_variant(sandbox: Sandbox, whole: tuple[Any, Any], *, seccomp: bool, cgroups: bool):
    """Run `sandbox`'s next calls as a machine without libseccomp or cgroups runs them
    (`whole`: the backend's seccomp flag and cgroup with the whole jail)."""
    backend: Any = sandbox._backend
    backend.seccomp = whole[0] if seccomp else False
    backend.cgroup = whole[1] if cgroups else None


def bench_calls(ctx: Context) -> None:
    ctx.log("1/7 per-call overhead")
    n = ctx.sizes.repeat * 2
    store = new_store(ctx, "calls", durable=False)
    sb = Sandbox.create(store)
    # diagnostic only: the same call with its store on tmpfs, where a new inode is free
    shm_root = _tmpfs_scratch() if ctx.mode != "copy" else None
    on_tmpfs = None
    if shm_root is not None:
        on_tmpfs = Sandbox.create(
            LayerStore(os.path.join(shm_root, "s"), durable=False, place=False)
        )
    boxed, boxed_exec, plain, shell, tmpfs_box = [], [], [], [], []
    bare: dict[str, list[float]] = {"no seccomp": [], "no cgroups": [], "neither": []}
    variants = {"no seccomp": (False, True), "no cgroups": (True, False), "neither": (False, False)}
    backend: Any = sb._backend
    whole = (getattr(backend, "seccomp", False), getattr(backend, "cgroup", None))
    for i in range(WARMUP + n):
        # interleaved, so that drift in the machine's load hits all alike
        t_box, obs = timed(lambda: sb.run("true"))
        must(obs, "run true")
        if ctx.mode != "copy":
            for name, (seccomp, cgroups) in variants.items():
                _jail_variant(sb, whole, seccomp=seccomp, cgroups=cgroups)
                t_bare, obs = timed(lambda: sb.run("true"))
                must(obs, f"run true, {name}")
                if i >= WARMUP:
                    bare[name].append(t_bare)
            _jail_variant(sb, whole, seccomp=True, cgroups=True)
        if on_tmpfs is not None:
            t_tmpfs, obs = timed(lambda: on_tmpfs.run("true"))
            must(obs, "run true, store on tmpfs")
            if i >= WARMUP:
                tmpfs_box.append(t_tmpfs)
        t_exec, obs = timed(lambda: sb.run("/bin/true"))
        must(obs, "run /bin/true")
        t_plain, _ = timed(lambda: subprocess.run(["true"], check=True))
        t_shell, _ = timed(lambda: subprocess.run(["/bin/bash", "-c", "true"], check=True))
        if i >= WARMUP:
            boxed.append(t_box)
            boxed_exec.append(t_exec)
            plain.append(t_plain)
            shell.append(t_shell)
    against: list[float] = []
    if ctx.against:
        ctx.log(f"   the same call from {ctx.against}")
        for _ in range(5):  # alternating with this tree's own calls, five times
            against += _against_series(ctx, ctx.against, max(n // 5, 1))
            boxed += [timed(lambda: must(sb.run("true"), "run true"))[0] for _ in range(n // 5)]
    sb.close()
    if on_tmpfs is not None and shm_root is not None:
        on_tmpfs.close()
        remove(shm_root)
    s_box, s_plain, s_shell = summary(boxed), summary(plain), summary(shell)
    s_exec = summary(boxed_exec)
    overhead = p50(s_box) - p50(s_plain)
    ctx.results["per_call"] = {
        "sandbox_run_true": s_box,
        "subprocess_true": s_plain,
        "subprocess_bash_c_true": s_shell,
        "sandbox_run_bin_true": s_exec,
        "overhead_p50_ms": overhead,
        "overhead_vs_bash_p50_ms": p50(s_box) - p50(s_shell),
    }
    if tmpfs_box:
        ctx.results["per_call"]["sandbox_run_true_store_on_tmpfs"] = summary(tmpfs_box)
    verdict = ctx.target(
        "per-call overhead", overhead < 15, f"{overhead:.2f} ms", "< 15 ms above subprocess"
    )
    section = "1. per call"
    ctx.rows += [
        Row(
            section,
            'sb.run("true")',
            fmt_ms(p50(s_box)),
            fmt_ms(p90(s_box)),
            f'subprocess.run(["true"]) {fmt_ms(p50(s_plain))}',
            f"+{fmt_ms(overhead)}",
            "< +15 ms",
            verdict,
        ),
        Row(
            section,
            '  same, vs the shell it runs (bash -c "true")',
            fmt_ms(p50(s_box)),
            fmt_ms(p90(s_box)),
            f"subprocess bash -c true {fmt_ms(p50(s_shell))}",
            f"+{fmt_ms(p50(s_box) - p50(s_shell))}",
        ),
        Row(
            section,
            '  sb.run("/bin/true"): the shell execs a binary from the image',
            fmt_ms(p50(s_exec)),
            fmt_ms(p90(s_exec)),
            f'subprocess.run(["true"]) {fmt_ms(p50(s_plain))}',
            f"+{fmt_ms(p50(s_exec) - p50(s_plain))}",
        ),
    ]
    for name, series in bare.items():
        if not series:
            continue
        s_bare = summary(series)
        ctx.results["per_call"][f"sandbox_run_true_{name.replace(' ', '_')}"] = s_bare
        ctx.rows.append(
            Row(
                section,
                f'  the jail\'s share: sb.run("true") with {name}',
                fmt_ms(p50(s_bare)),
                fmt_ms(p90(s_bare)),
                f"whole jail {fmt_ms(p50(s_box))}",
                f"{p50(s_box) - p50(s_bare):+.2f} ms",
                "",
                "what that part costs",
            )
        )
    if against:
        s_against = summary(against)
        extra = p50(s_box) - p50(s_against)
        ctx.results["per_call"]["against"] = {"source": ctx.against, "sandbox_run_true": s_against}
        ctx.rows.append(
            Row(
                section,
                f'  sb.run("true") of the --against tree ({ctx.against})',
                fmt_ms(p50(s_against)),
                fmt_ms(p90(s_against)),
                f"this tree {fmt_ms(p50(s_box))}",
                f"{extra:+.2f} ms",
                "<= +3 ms",
                ctx.target("the jail's cost per call", extra <= 3, f"{extra:+.2f} ms", "<= +3 ms"),
            )
        )
    if tmpfs_box:
        s_tmpfs = summary(tmpfs_box)
        ctx.rows.append(
            Row(
                section,
                '  diagnostic: sb.run("true") with the store on tmpfs',
                fmt_ms(p50(s_tmpfs)),
                fmt_ms(p90(s_tmpfs)),
                f"store in the store dir {fmt_ms(p50(s_box))}",
                fmt_ratio(p50(s_tmpfs) / p50(s_box)),
                "",
                "not a target: isolates inode cost",
            )
        )


def bench_network(ctx: Context) -> None:
    """A call under `public` and `allowlist` beside one under `none`, each policy's network
    coming up (once per sandbox, and so per fork), and 100 MB through the stack against the
    same download on the host, in a world of namespaces of the benchmark's own
    (sandbox_network.py)."""
    section = "8. network"
    if ctx.mode != "root":
        ctx.rows.append(Row(section, "network rows", "", result="SKIPPED: needs the root mode"))
        return
    ctx.log("8 network: none vs public, in namespaces of the benchmark's own")
    found = sandbox_network.measure(ctx.path("network"), ctx.sizes.repeat * 2)
    calls = {name: summary(series) for name, series in found["calls_s"].items()}
    starts = {name: summary(series) for name, series in found["starts_s"].items()}
    rates = {
        name: sorted(n / s for n, s in rounds)[len(rounds) // 2]
        for name, rounds in found["downloads"].items()
    }
    extra = p50(calls["public"]) - p50(calls["none"])
    extra_allowlist = p50(calls["allowlist"]) - p50(calls["none"])
    up = p50(starts["public"])
    up_allowlist = p50(starts["allowlist"])
    slowdown = rates["host"] / rates["public"]
    ctx.results["network"] = {"calls": calls, "starts": starts, "download_bytes_per_s": rates}
    ctx.rows += [
        Row(
            section, 'sb.run("true") under public', fmt_ms(p50(calls["public"])),
            fmt_ms(p90(calls["public"])), f"under none {fmt_ms(p50(calls['none']))}",
            f"{extra:+.2f} ms", "<= +2 ms",
            ctx.target("public per call", extra <= 2, f"{extra:+.2f} ms", "<= +2 ms"),
        ),
        Row(
            section, 'sb.run("true") under allowlist', fmt_ms(p50(calls["allowlist"])),
            fmt_ms(p90(calls["allowlist"])), f"under none {fmt_ms(p50(calls['none']))}",
            f"{extra_allowlist:+.2f} ms", "<= +2 ms",
            ctx.target(
                "allowlist per call", extra_allowlist <= 2, f"{extra_allowlist:+.2f} ms", "<= +2 ms"
            ),
        ),
        Row(
            section, "a sandbox's network up: public (firewall + stack)", fmt_ms(up),
            fmt_ms(p90(starts["public"])), f"none {fmt_ms(p50(starts['none']))}",
            fmt_ratio(up / p50(starts["none"])), "<= 50 ms",
            ctx.target("a fork's network up", up <= 50, fmt_ms(up), "<= 50 ms"),
        ),
        Row(
            section, "a sandbox's network up: allowlist (+ its resolver)", fmt_ms(up_allowlist),
            fmt_ms(p90(starts["allowlist"])), f"public {fmt_ms(up)}",
            fmt_ratio(up_allowlist / up), "<= 50 ms",
            ctx.target(
                "an allowlist fork's network up", up_allowlist <= 50, fmt_ms(up_allowlist),
                "<= 50 ms",
            ),
        ),
        Row(
            section, f"{fmt_bytes(sandbox_network.DOWNLOAD_BYTES)} download through the stack",
            f"{fmt_bytes(rates['public'])}/s", "", f"on the host {fmt_bytes(rates['host'])}/s",
            f"{slowdown:.2f}x slower", "<= 2x",
            ctx.target("download through the stack", slowdown <= 2, f"{slowdown:.2f}x", "<= 2x"),
        ),
    ]  # fmt: skip


# --------------------------------------------------------------------------- environments


@dataclass
class Env:
    label: str
    store: LayerStore
    base: str
    files: int
    nbytes: int
    create_s: float
    write_s: float


def build_env(ctx: Context, label: str, name: str, total: int) -> Env:
    source = ctx.path(f"{name}-source")
    write_s, (files, nbytes) = timed(lambda: make_tree(source, total))
    store = new_store(ctx, name, durable=False)
    create_s, sb = timed(lambda: Sandbox.create(store, files=source))
    base = sb.parent
    sb.close()
    remove(source)
    return Env(label, store, base, files, nbytes, create_s, write_s)


# --------------------------------------------------------------------------- 2. checkpoint


def bench_checkpoint(ctx: Context, small: Env, big: Env) -> None:
    ctx.log("2/7 checkpoint: seal and durability flush")
    n = ctx.sizes.repeat
    os.sync()
    seals: dict[str, list[float]] = {small.label: [], big.label: []}
    flushes: list[float] = []
    fsyncs: list[float] = []
    durable_s: list[float] = []
    turn_bytes = 0
    layer_disk = 0
    # the default store (durable=True) over the small env, for checkpoint() end to end
    durable = LayerStore(small.store.path, durable=True)
    boxes = {
        small.label: Sandbox.fork(small.store, small.base),
        big.label: Sandbox.fork(big.store, big.base),
        "durable": Sandbox.fork(durable, small.base),
    }
    for i in range(WARMUP + n):
        # one turn in each sandbox per round, so that drift in the machine hits all alike
        for label, sb in boxes.items():
            previous = sb.parent
            must(sb.run(f"echo turn {i} > turn_{i}.txt"), "small turn")
            t_seal, cid = timed(sb.checkpoint)
            if cid == previous:
                raise BenchError("checkpoint after a write returned the previous id")
            if i < WARMUP:
                continue
            if label == "durable":
                durable_s.append(t_seal)
                continue
            seals[label].append(t_seal)
            if label == small.label:
                diff = small.store.diff_dir(cid)
                t_flush, _ = timed(lambda d=diff: flush_tree(d))
                turn_bytes = content_bytes(diff)
                layer_disk = small.store.layer(cid).size
                flushes.append(t_flush)
                fsyncs.append(fsync_fresh_file(ctx.path("fsync-baseline"), turn_bytes))
    for sb in boxes.values():
        sb.close()

    s_small, s_big = summary(seals[small.label]), summary(seals[big.label])
    s_flush, s_fsync, s_durable = summary(flushes), summary(fsyncs), summary(durable_s)
    ratio = p50(s_big) / p50(s_small)
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
    section = "2. checkpoint"
    ctx.rows += [
        Row(
            section,
            f"seal (durable=False), {fmt_bytes(small.nbytes)} workdir",
            fmt_ms(p50(s_small)),
            fmt_ms(p90(s_small)),
            "",
            "",
            "p50 < 2 ms",
            "PASS" if p50(s_small) < 2 else "MISS",
        ),
        Row(
            section,
            f"seal (durable=False), {fmt_bytes(big.nbytes)} workdir",
            fmt_ms(p50(s_big)),
            fmt_ms(p90(s_big)),
            f"seal, {fmt_bytes(small.nbytes)} workdir {fmt_ms(p50(s_small))}",
            fmt_ratio(ratio),
            "p50 < 2 ms; ratio < 1.2",
            "PASS" if p50(s_big) < 2 and ratio < 1.2 else "MISS",
        ),
        Row(
            section,
            f"durability flush: flush_tree of that layer ({turn_bytes} B in files, "
            f"{fmt_bytes(layer_disk)} on disk)",
            fmt_ms(p50(s_flush)),
            fmt_ms(p90(s_flush)),
            f"fsync of a {turn_bytes} B file {fmt_ms(p50(s_fsync))}",
            fmt_ratio(p50(s_flush) / p50(s_fsync)),
        ),
        Row(
            section,
            "checkpoint() with durable=True (the default), same turn",
            fmt_ms(p50(s_durable)),
            fmt_ms(p90(s_durable)),
            f"seal alone {fmt_ms(p50(s_small))}",
            fmt_ratio(p50(s_durable) / p50(s_small)),
        ),
    ]


# --------------------------------------------------------------------------- 3. fork


def bench_fork(ctx: Context, small: Env, big: Env) -> None:
    ctx.log("3/7 fork vs cp -a")
    n = ctx.sizes.repeat
    os.sync()
    forks: dict[str, list[float]] = {}
    fork_runs: dict[str, list[float]] = {}
    copies: dict[str, list[float]] = {}
    for env in (small, big):
        check = Sandbox.fork(env.store, env.base)
        seen = must(check.run("find . -type f | wc -l"), "count files").output.strip()
        check.close()
        if seen != str(env.files):
            raise BenchError(f"a fork of the {env.label} env sees {seen} files, not {env.files}")
        forks[env.label], fork_runs[env.label] = [], []
        for i in range(WARMUP + n):
            start = time.perf_counter()
            sb = Sandbox.fork(env.store, env.base)
            forked = time.perf_counter()
            must(sb.run("true"), "first call of a fork")
            ran = time.perf_counter()
            sb.close()
            if i >= WARMUP:
                forks[env.label].append(forked - start)
                fork_runs[env.label].append(ran - start)
        copies[env.label] = []
        source = os.path.realpath(env.store.diff_dir(env.base))  # a link on a capped store
        target = ctx.path("cp-copy")
        # the big env was just written and fits in memory: its cache is warm already
        warm, rounds = (0, ctx.sizes.big_repeat) if env is big else (1, n)
        for i in range(warm + rounds):
            t, _ = timed(lambda s=source, t=target: subprocess.run(["cp", "-a", s, t], check=True))
            remove(target)
            if i >= warm:
                copies[env.label].append(t)

    out: dict[str, Any] = {}
    section = "3. fork"
    for env in (small, big):
        s_fork = summary(forks[env.label])
        s_run = summary(fork_runs[env.label])
        s_cp = summary(copies[env.label])
        ratio = p50(s_fork) / p50(s_cp)
        out[env.label] = {
            "env_bytes": env.nbytes,
            "env_files": env.files,
            "fork": s_fork,
            "fork_then_first_run_true": s_run,
            "cp_a": s_cp,
            "fork_over_cp_p50": ratio,
        }
        target, verdict = "", ""
        if env is big:
            ok = p50(s_fork) < 2 and ratio < 1e-3
            target = "p50 < 2 ms; < 1/1000 of cp"
            verdict = ctx.target(
                "fork latency",
                ok,
                f"p50 {p50(s_fork):.3f} ms, {ratio:.2e} of cp -a",
                "p50 < 2 ms and < 1/1000 of a full copy",
            )
        ctx.rows += [
            Row(
                section,
                f"Sandbox.fork, {fmt_bytes(env.nbytes)} env ({env.files} files)",
                fmt_ms(p50(s_fork)),
                fmt_ms(p90(s_fork)),
                f"cp -a (warm cache, n={s_cp['n']}) {fmt_ms(p50(s_cp))}",
                fmt_ratio(ratio),
                target,
                verdict,
            ),
            Row(
                section,
                f'  fork + first run("true"), {fmt_bytes(env.nbytes)} env',
                fmt_ms(p50(s_run)),
                fmt_ms(p90(s_run)),
                f"cp -a {fmt_ms(p50(s_cp))}",
                fmt_ratio(p50(s_run) / p50(s_cp)),
            ),
        ]
    out["create_big_env_s"] = big.create_s
    out["write_big_env_source_s"] = big.write_s
    ctx.rows.append(
        Row(
            section,
            f"  (one-time) Sandbox.create(files=...) of the {fmt_bytes(big.nbytes)} env",
            fmt_ms(big.create_s * 1e3),
            "",
            f"writing its source tree {fmt_ms(big.write_s * 1e3)}",
            fmt_ratio(big.create_s / big.write_s),
        )
    )
    ctx.results["fork"] = out


def bench_squash(ctx: Context, big: Env, seal_p50_ms: float) -> None:
    """The checkpoint that crosses max_stack merges the whole stack (hard links)."""
    ctx.log("3/7 squash of the big env")
    rounds = ctx.sizes.big_repeat
    found: dict[str, Any] = {}
    section = "3. fork"
    for durable in (False, True):
        store = LayerStore(big.store.path, durable=durable, max_stack=2)
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
        s = summary(times)
        key = "durable" if durable else "not_durable"
        found[key] = {
            "checkpoint_that_squashes": s,
            "new_disk_bytes": new_disk,
            "flat_layer_reported_size": reported,
        }
        ctx.rows.append(
            Row(
                section,
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


# --------------------------------------------------------------------------- 4. stored bytes


def bench_stored(ctx: Context) -> None:
    ctx.log("4/7 stored vs written bytes")
    sz = ctx.sizes
    rounds = sz.big_repeat
    store = new_store(ctx, "bytes", durable=False)
    sb = Sandbox.create(store)
    base = sb.parent
    sb.close()
    new_cmd = (
        f"for i in $(seq 1 {sz.new_files}); do "
        f"head -c {sz.new_file_size} /dev/zero > new_$i.bin; done"
    )
    written = sz.new_files * sz.new_file_size
    plain_dir = ctx.path("plain")
    os.makedirs(plain_dir)
    subprocess.run(["/bin/bash", "-c", new_cmd], cwd=plain_dir, check=True)
    plain_disk = disk_usage(plain_dir)
    remove(plain_dir)
    os.sync()

    stored, seal_s, flush_s, fsync_s, syncfs_s, run_s = [], [], [], [], [], []
    for _ in range(rounds):
        sb = Sandbox.fork(store, base)
        t_run, obs = timed(lambda sb=sb: sb.run(new_cmd))
        must(obs, "write new files")
        t_seal, cid = timed(sb.checkpoint)
        stored.append(store.layer(cid).size)
        t_flush, _ = timed(lambda c=cid: flush_tree(store.diff_dir(c)))
        sb.close()
        # the same turn again, made durable with one syncfs instead
        sb = Sandbox.fork(store, base)
        must(sb.run(new_cmd), "write new files")
        sb.checkpoint()
        t_syncfs = syncfs(store.path)
        sb.close()
        t_fsync = fsync_fresh_file(ctx.path("fsync-baseline"), written)
        store.gc(keep=[base])
        run_s.append(t_run)
        seal_s.append(t_seal)
        flush_s.append(t_flush)
        syncfs_s.append(t_syncfs)
        fsync_s.append(t_fsync)
    ratio_new = max(stored) / written

    # many small files: the filesystem's block rounding, same as without a sandbox
    small_cmd = f"for i in $(seq 1 {sz.small_files}); do printf '%1000s' '' > s_$i; done"
    small_written = sz.small_files * 1000
    os.makedirs(plain_dir)
    subprocess.run(["/bin/bash", "-c", small_cmd], cwd=plain_dir, check=True)
    small_plain = disk_usage(plain_dir)
    remove(plain_dir)
    sb = Sandbox.fork(store, base)
    must(sb.run(small_cmd), "write small files")
    small_stored = store.layer(sb.checkpoint()).size
    sb.close()
    store.gc(keep=[base])

    # one byte of a big file that lives in a lower layer: overlayfs copies it up whole
    sb = Sandbox.fork(store, base)
    must(sb.run(f"head -c {sz.copyup_file} /dev/zero > big.bin"), "write big file")
    lower = sb.checkpoint()
    sb.close()
    os.sync()
    offset = sz.copyup_file // 2
    poke = f"printf x | dd of=big.bin bs=1 seek={offset} count=1 conv=notrunc status=none"
    poke_again = poke.replace(f"seek={offset}", f"seek={offset + 1}")
    copyup_stored, copyup_run, copyup_seal, again_run = [], [], [], []
    for _ in range(rounds):
        sb = Sandbox.fork(store, lower)
        t_run, obs = timed(lambda sb=sb: sb.run(poke))
        must(obs, "poke one byte")
        # the same write again: the file is in the upper layer now, nothing to copy
        t_again, obs = timed(lambda sb=sb: sb.run(poke_again))
        must(obs, "poke one more byte")
        again_run.append(t_again)
        t_seal, cid = timed(sb.checkpoint)
        copyup_stored.append(store.layer(cid).size)
        check = must(sb.run(f"od -An -c -j {offset} -N 1 big.bin"), "read back").output
        if "x" not in check:
            raise BenchError(f"the poked byte did not land: {check!r}")
        sb.close()
        store.gc(keep=[lower])
        copyup_run.append(t_run)
        copyup_seal.append(t_seal)
    # baseline: the same one-byte write to a plain file of the same size
    plain_big = ctx.path("big.bin")  # the name `poke` writes to, in ctx.root
    with open(plain_big, "wb") as handle:
        subprocess.run(["head", "-c", str(sz.copyup_file), "/dev/zero"], stdout=handle, check=True)
    os.sync()
    plain_poke = []
    for _ in range(rounds):
        t, _ = timed(lambda: subprocess.run(["/bin/bash", "-c", poke], cwd=ctx.root, check=True))
        plain_poke.append(t)
    os.unlink(plain_big)
    remove(store.path)

    s_seal, s_flush, s_syncfs, s_fsync, s_run = (
        summary(x) for x in (seal_s, flush_s, syncfs_s, fsync_s, run_s)
    )
    s_cu_run, s_cu_seal, s_plain_poke, s_again = (
        summary(x) for x in (copyup_run, copyup_seal, plain_poke, again_run)
    )
    ctx.results["stored_bytes"] = {
        "new_files": {
            "files": sz.new_files,
            "file_size": sz.new_file_size,
            "written_bytes": written,
            "stored_bytes": stored,
            "plain_dir_disk_bytes": plain_disk,
            "stored_over_written": ratio_new,
            "stored_over_plain_dir": max(stored) / plain_disk,
            "run": s_run,
            "seal": s_seal,
            "flush_tree": s_flush,
            "syncfs_instead": s_syncfs,
            "fsync_one_file_same_bytes": s_fsync,
        },
        "small_files": {
            "files": sz.small_files,
            "file_size": 1000,
            "written_bytes": small_written,
            "stored_bytes": small_stored,
            "plain_dir_disk_bytes": small_plain,
            "stored_over_written": small_stored / small_written,
            "stored_over_plain_dir": small_stored / small_plain,
        },
        "copy_up": {
            "lower_file_bytes": sz.copyup_file,
            "written_bytes": 1,
            "stored_bytes": copyup_stored,
            "stored_over_file_size": max(copyup_stored) / sz.copyup_file,
            "run_poke_one_byte": s_cu_run,
            "seal": s_cu_seal,
            "run_poke_again_no_copy_up": s_again,
            "plain_poke_one_byte_outside_sandbox": s_plain_poke,
        },
    }
    verdict = ctx.target(
        "stored/written, new files", ratio_new <= 1.05, f"{ratio_new:.4f}", "<= 1.05"
    )
    section = "4. stored bytes"
    ctx.rows += [
        Row(
            section,
            f"turn writes {sz.new_files} new files of {fmt_bytes(sz.new_file_size)}: "
            f"layer size / bytes written",
            f"{fmt_bytes(max(stored))} / {fmt_bytes(written)}",
            "",
            f"same files in a plain dir: {fmt_bytes(plain_disk)} on disk",
            f"{ratio_new:.4f}",
            "<= 1.05",
            verdict,
        ),
        Row(
            section,
            f"  seal of that {fmt_bytes(written)} layer (durable=False)",
            fmt_ms(p50(s_seal)),
            fmt_ms(p90(s_seal)),
            f"the turn itself {fmt_ms(p50(s_run))}",
            fmt_ratio(p50(s_seal) / p50(s_run)),
        ),
        Row(
            section,
            f"  durability flush of that layer: flush_tree ({sz.new_files} files)",
            fmt_ms(p50(s_flush)),
            fmt_ms(p90(s_flush)),
            f"fsync of one {fmt_bytes(written)} file {fmt_ms(p50(s_fsync))}",
            fmt_ratio(p50(s_flush) / p50(s_fsync)),
        ),
        Row(
            section,
            "  same turn made durable with one syncfs(2) instead",
            fmt_ms(p50(s_syncfs)),
            fmt_ms(p90(s_syncfs)),
            f"flush_tree {fmt_ms(p50(s_flush))}",
            fmt_ratio(p50(s_syncfs) / p50(s_flush)),
        ),
        Row(
            section,
            f"turn writes {sz.small_files} files of 1000 B: layer size / bytes written",
            f"{fmt_bytes(small_stored)} / {fmt_bytes(small_written)}",
            "",
            f"same files in a plain dir: {fmt_bytes(small_plain)}",
            f"{small_stored / small_written:.3f}",
            "",
            f"fs blocks; vs plain dir {small_stored / small_plain:.3f}",
        ),
        Row(
            section,
            f"turn changes 1 byte of a {fmt_bytes(sz.copyup_file)} lower file: stored",
            fmt_bytes(max(copyup_stored)),
            "",
            "bytes written: 1 B",
            f"{max(copyup_stored) / sz.copyup_file:.3f}x the file",
            "",
            "COPY-UP: whole file stored",
        ),
        Row(
            section,
            "  that one-byte write (run, includes the copy-up)",
            fmt_ms(p50(s_cu_run)),
            fmt_ms(p90(s_cu_run)),
            f"next byte, file already up {fmt_ms(p50(s_again))}",
            fmt_ratio(p50(s_cu_run) / p50(s_again)),
            "",
            f"outside a sandbox {fmt_ms(p50(s_plain_poke))}",
        ),
        Row(
            section,
            "  seal of that copied-up layer (durable=False)",
            fmt_ms(p50(s_cu_seal)),
            fmt_ms(p90(s_cu_seal)),
        ),
    ]


# --------------------------------------------------------------------------- 5. deep stacks


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


def bench_deep(ctx: Context) -> None:
    ctx.log("5/7 deep stacks")
    sz = ctx.sizes
    source = ctx.path("deep-source")
    os.makedirs(source)
    for i in range(sz.lookup_files):
        with open(os.path.join(source, f"b{i:05d}"), "w") as handle:
            handle.write("b\n")
    with open(os.path.join(source, "f0"), "w") as handle:
        handle.write("f0\n")
    store = new_store(ctx, "deep", durable=False)
    sb = Sandbox.create(store, files=source)
    base = sb.parent
    remove(source)

    chain_s: list[float] = []
    squash_s: list[float] = []
    chain: list[str] = []
    for i in range(1, sz.chain + 1):
        must(sb.run(f"echo {i} > t{i}"), "chain turn")
        t, cid = timed(sb.checkpoint)
        chain.append(cid)
        (squash_s if store.layer(cid).flat is not None else chain_s).append(t)
    sb.close()
    top = chain[-1]
    depths = [len(store.stack(c)) for c in chain]
    deepest = chain[max(range(len(chain)), key=lambda k: depths[k])]

    # the deepest stack the store lets a sandbox mount: max_stack=300
    wide = LayerStore(store.path, durable=False, max_stack=300)
    sb = Sandbox.fork(wide, base)
    deep_top = base
    for i in range(1, sz.deep_mount):
        must(sb.run(f"echo {i} > u{i}"), "deep turn")
        deep_top = sb.checkpoint()
    sb.close()

    probes = {
        "1": _probe(ctx, store, base),
        "top_of_chain": _probe(ctx, store, top),
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
    section = "5. deep stacks"
    ctx.rows.append(
        Row(
            section,
            f"{sz.chain} checkpoints, max_stack={store.max_stack}: seal p50 (squashing ones apart)",
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
            f"mounted depth at turn {sz.chain}: {probes['top_of_chain']['mounted_depth']}; "
            f"max {max(depths)}",
        )
    )
    one = probes["1"]
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
            ctx.rows.append(
                Row(
                    section,
                    f"{label}, mounted depth {d}: {what}",
                    fmt_ms(p50(s)),
                    fmt_ms(p90(s)),
                    f"depth 1 {fmt_ms(p50(base_s))}",
                    fmt_ratio(p50(s) / p50(base_s)),
                )
            )


# --------------------------------------------------------------------------- 6-7. the reflink store

REFLINK_IMAGE_SIZE = "8G"
"""SPROUT_STORE_SIZE of the benchmark's own store filesystem: a bound, not a cost (the
image is sparse and holds what the reflink pass writes, about 2.6 GB at default sizes)."""

METADATA_ALLOWANCE = 16 << 10
"""The "metadata" in the 1-byte append's target (one block + metadata): one btrfs
metadata node, at mkfs.btrfs's default node size."""

APPENDS = (1, 1_000_000)
"""Bytes that the turns of section 6 append to the big lower file."""


@contextlib.contextmanager
def reflink_store_fs(ctx: Context) -> Iterator[tuple[str | None, str]]:
    """sprout's store filesystem as a run as root makes it, but under this benchmark's own
    SPROUT_CACHE and bounded: (its mount point, "") or (None, why the reflink rows are
    skipped). However the benchmark ends, it is unmounted on the way out, the loop device
    of its image detached, and the settings put back."""
    settings = {
        "SPROUT_CACHE": ctx.path("cache"),
        btrfs.SIZE: REFLINK_IMAGE_SIZE,
        btrfs.SWITCH: "auto",
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


def exclusive_bytes(store: LayerStore, layer_id: str) -> int | None:
    """What btrfs itself says a sealed layer of a capped store holds that nothing else
    shares (`sprout.sandbox.storefs.quota.exclusive_bytes`); None on a store whose layers are not
    subvolumes."""
    if not store.capped:
        return None
    from sprout.sandbox.storefs.quota import exclusive_bytes as qgroup_exclusive

    return qgroup_exclusive(os.path.realpath(store.diff_dir(layer_id)))


def bench_append(ctx: Context, reflink: Context | None, skipped: str) -> None:
    """A turn appends to a big file of a lower layer. Its first write makes overlayfs copy
    the file up: the plain store copies its bytes, the reflink store clones its extents.
    Rounds alternate between stores and sizes, so drift in the machine hits all alike."""
    ctx.log("6/7 appends to a big lower file, on both stores")
    sz = ctx.sizes
    passes = {"plain": ctx} if reflink is None else {"plain": ctx, "reflink": reflink}
    lowers: dict[str, tuple[LayerStore, str]] = {}
    for label, pass_ctx in passes.items():
        store = new_store(pass_ctx, "append", durable=False)
        sb = Sandbox.create(store)
        must(sb.run(f"head -c {sz.copyup_file} /dev/zero > big.bin"), "write the big file")
        lowers[label] = (store, sb.checkpoint())
        sb.close()
    series: dict[tuple[str, int], dict[str, list[Any]]] = {
        (label, n): {key: [] for key in ("write", "seal", "write_seal", "flush", "stored")}
        for label in passes
        for n in APPENDS
    }
    for _ in range(sz.big_repeat):
        for n in APPENDS:
            for label, (store, lower) in lowers.items():
                os.sync()  # the copies of the round before are on disk, not in this timing
                sb = Sandbox.fork(store, lower)
                t_write, obs = timed(lambda sb=sb, n=n: sb.run(f"head -c {n} /dev/zero >> big.bin"))
                must(obs, f"append {n} B")
                t_seal, cid = timed(sb.checkpoint)
                diff = store.diff_dir(cid)
                t_flush, _ = timed(lambda d=diff: flush_tree(d))
                size = must(sb.run("stat -c %s big.bin"), "size of the big file").output.strip()
                sb.close()
                if size != str(sz.copyup_file + n):
                    raise BenchError(f"after appending {n} B the big file has {size} B")
                found = series[label, n]
                found["write"].append(t_write)
                found["seal"].append(t_seal)
                found["write_seal"].append(t_write + t_seal)
                found["flush"].append(t_flush)
                found["stored"].append(
                    {
                        "layer_size_at_seal": store.layer(cid).size,
                        "owned_after_flush": disk_usage(diff),
                        "exclusive_with_metadata": exclusive_bytes(store, cid),
                    }
                )
                store.gc(keep=[lower])
    results: dict[str, Any] = {
        "lower_file_bytes": sz.copyup_file,
        "rounds": sz.big_repeat,
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
    section = "6. append to a big lower file"
    for n in APPENDS:
        ctx.rows += _plain_append_rows(section, results, n)
        if reflink is not None:
            ctx.rows += _reflink_append_rows(ctx, section, results, n)
    if reflink is None:
        results["reflink"] = {"skipped": skipped}
        ctx.rows.append(
            Row(section, "reflink store: append rows", "", result=f"SKIPPED: {skipped}")
        )
    ctx.results["append_to_big_lower_file"] = results


def _append_figure(results: dict[str, Any], label: str, n: int) -> str:
    fs_type = results[label]["store_filesystem"]["type"]
    return (
        f"{label} store ({fs_type}): append {fmt_bytes(n)} to a "
        f"{fmt_bytes(results['lower_file_bytes'])} lower file, write + seal"
    )


def _plain_append_rows(section: str, results: dict[str, Any], n: int) -> list[Row]:
    found = results["plain"][f"append_{n}_B"]
    stored = max(found["stored"]["owned_after_flush"])
    return [
        Row(
            section,
            _append_figure(results, "plain", n),
            fmt_ms(p50(found["write_seal"])),
            fmt_ms(p90(found["write_seal"])),
            f"the write alone {fmt_ms(p50(found['write']))}",
            fmt_ratio(p50(found["write_seal"]) / p50(found["write"])),
        ),
        Row(
            section,
            "  stored: the layer's blocks",
            fmt_bytes(stored),
            "",
            f"bytes written: {fmt_bytes(n)}",
            f"{stored / results['lower_file_bytes']:.3f}x the file",
        ),
        Row(
            section,
            "  durability flush of that layer (what durable=True adds)",
            fmt_ms(p50(found["flush_tree"])),
            fmt_ms(p90(found["flush_tree"])),
        ),
    ]


def _reflink_append_rows(ctx: Context, section: str, results: dict[str, Any], n: int) -> list[Row]:
    """The reflink store's rows of one append, against the plain store's, with the targets:
    1 byte: write + seal <= 50 ms, and btrfs's own count of the layer's bytes (data and
    metadata) <= one block + one metadata node; 1 MB: the layer's data <= 1 MB + one block."""
    found, plain = results["reflink"][f"append_{n}_B"], results["plain"][f"append_{n}_B"]
    block = results["reflink"]["block_bytes"]
    owned = max(found["stored"]["owned_after_flush"])
    exclusive = max(found["stored"]["exclusive_with_metadata"])
    recorded = found["stored"]["layer_size_at_seal"]
    plain_stored = max(plain["stored"]["owned_after_flush"])
    s_ws = found["write_seal"]
    if n == 1:
        wanted_ws = "p50 <= 50 ms"
        ws_verdict = ctx.target(
            "reflink store: 1-byte append, write + seal",
            p50(s_ws) <= 50,
            f"p50 {p50(s_ws):.1f} ms",
            wanted_ws,
        )
        wanted_owned, owned_verdict = "", ""
        wanted_excl = f"<= {block} + {METADATA_ALLOWANCE} B"
        excl_verdict = ctx.target(
            "reflink store: 1-byte append, stored bytes with metadata",
            exclusive <= block + METADATA_ALLOWANCE,
            f"{exclusive} B",
            wanted_excl,
        )
    else:
        wanted_ws, ws_verdict, wanted_excl, excl_verdict = "", "", "", ""
        wanted_owned = f"<= {n} + {block} B"
        owned_verdict = ctx.target(
            f"reflink store: {fmt_bytes(n)} append, stored bytes",
            owned <= n + block,
            f"{owned} B",
            wanted_owned,
        )
    return [
        Row(
            section,
            _append_figure(results, "reflink", n),
            fmt_ms(p50(s_ws)),
            fmt_ms(p90(s_ws)),
            f"plain store {fmt_ms(p50(plain['write_seal']))}",
            fmt_ratio(p50(s_ws) / p50(plain["write_seal"])),
            wanted_ws,
            ws_verdict,
        ),
        Row(
            section,
            "  stored: the layer's blocks (extents it alone holds)",
            f"{owned} B",
            "",
            f"plain store {fmt_bytes(plain_stored)}",
            fmt_ratio(owned / plain_stored),
            wanted_owned,
            owned_verdict,
        ),
        Row(
            section,
            "  stored with its metadata: btrfs qgroup exclusive bytes of its subvolume",
            f"{exclusive} B",
            "",
            "",
            "",
            wanted_excl,
            excl_verdict,
        ),
        Row(
            section,
            "  Layer.size recorded at the seal (durable=False: before writeback)",
            f"{max(recorded)} B",
            "",
            f"the layer's blocks {owned} B",
            "",
            "",
            "the same" if recorded == found["stored"]["owned_after_flush"] else "differs",
        ),
        Row(
            section,
            "  durability flush of that layer (what durable=True adds)",
            fmt_ms(p50(found["flush_tree"])),
            fmt_ms(p90(found["flush_tree"])),
            f"plain store {fmt_ms(p50(plain['flush_tree']))}",
            fmt_ratio(p50(found["flush_tree"]) / p50(plain["flush_tree"])),
        ),
    ]


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
    section = "7. reflink store vs plain"
    sizes = {"small": fmt_bytes(ctx.sizes.small_env), "big": fmt_bytes(ctx.sizes.big_env)}
    checks = {check["target"]: check for check in reflink.checks}
    for keys, label, target in REFLINK_FIGURES:
        mine, plain = reflink.results, ctx.results
        for key in keys:
            mine, plain = mine[key], plain[key]
        check = checks.get(target) if target else None
        ctx.rows.append(
            Row(
                section,
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


# --------------------------------------------------------------------------- report


def render_table(rows: list[Row], markdown: bool) -> str:
    rows = sorted(rows, key=lambda r: r.section)  # stable: rows keep their order in a section
    header = ["figure", "p50", "p90", "baseline (p50)", "ratio", "target", "result"]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        section = None
        for r in rows:
            if r.section != section:
                section = r.section
                lines.append(f"| **{section}** |" + " |" * (len(header) - 1))
            cells = [r.figure.strip(), r.p50, r.p90, r.baseline, r.ratio, r.target, r.result]
            cells[0] = ("↳ " if r.figure.startswith("  ") else "") + cells[0]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        return "\n".join(lines)
    table = [header] + [
        [r.figure, r.p50, r.p90, r.baseline, r.ratio, r.target, r.result] for r in rows
    ]
    widths = [max(len(row[c]) for row in table) for c in range(len(header))]
    widths[0] = min(widths[0], 78)
    out = []
    section = None
    for index, row in enumerate(table):
        if index > 0 and rows[index - 1].section != section:
            section = rows[index - 1].section
            out.append(f"-- {section}")
        out.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(out)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sprout bench sandbox",
        description="Measure per-call overhead, checkpoint, fork, stored bytes and deep "
        "stacks of the sandbox, each beside a baseline measured in the same run.",
    )
    parser.add_argument(
        "--out",
        default="bench-results/sandbox.json",
        metavar="PATH",
        help="where to write the JSON results (default: %(default)s)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=0,
        metavar="N",
        help="timed runs of each fast figure (default 15; 5 with --quick; per-call uses 2N)",
    )
    parser.add_argument(
        "--big-repeat",
        type=int,
        default=0,
        metavar="N",
        help="timed runs of each slow figure: cp -a, 100 MB and 500 MB turns, squash "
        "(default 3; 2 with --quick)",
    )
    parser.add_argument(
        "--big-gb",
        type=float,
        default=None,
        metavar="GB",
        help="size of the big environment in GB of 10^9 bytes (default 2.0; 0.05 with --quick)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few repeats: a smoke run"
    )
    parser.add_argument(
        "--dir",
        default=None,
        metavar="DIR",
        help="where to put the layer stores (a fresh subdirectory, deleted at the end); "
        "default: the current directory's filesystem. Not tmpfs: that would flatter the "
        "durability flush",
    )
    parser.add_argument(
        "--mode",
        choices=("root", "rootless", "copy"),
        default=None,
        help="store mode (default: what this machine allows, as LayerStore picks it)",
    )
    parser.add_argument(
        "--against",
        metavar="SRC",
        help="another sprout tree's src/ folder (e.g. a worktree of an older commit): its "
        'sb.run("true") is timed in the same run, alternating with this tree\'s',
    )
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument(
        "--fail-on-miss", action="store_true", help="exit 1 when a target is missed"
    )
    args = parser.parse_args(argv)
    args.big_gb_given = args.big_gb is not None
    if args.big_gb is None:
        args.big_gb = 2.0
    if args.repeat < 0 or args.big_repeat < 0 or not args.big_gb > 0:
        parser.error("--repeat, --big-repeat and --big-gb must be positive")
    return args


def _sandbox_source_digest() -> str:
    """sha256 (first 16 hex digits) of the sandbox package's sources, as this run imported
    them: a working tree can differ from its commit."""
    package = Path(sprout.sandbox.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([*package.glob("*.py"), *package.glob("*.c")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _git_commit() -> str | None:
    """The checkout's commit (with "+dirty" when it has changes), if git can tell."""
    try:
        here = Path(__file__).resolve().parent
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def _end_on_sigterm(signum: int, _frame: object) -> None:
    """A terminated benchmark unwinds like an interrupted one: the finally blocks unmount
    its store filesystem and delete its stores."""
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> int:
    args = parse_args(list(argv))
    sizes = Sizes.from_args(args)
    parent = os.path.abspath(args.dir if args.dir else os.getcwd())
    if not os.path.isdir(parent):
        print(f"sprout bench sandbox: --dir {parent}: not a directory", file=sys.stderr)
        return 2
    root = tempfile.mkdtemp(prefix=".sprout-bench-", dir=parent)
    if any(c in root for c in ":,\n"):
        os.rmdir(root)
        print(f"sprout bench sandbox: {root}: ':' or ',' in the path", file=sys.stderr)
        return 2
    facts = stats.machine_facts(root)
    fs_type = facts["store_filesystem"]["type"]
    if fs_type in ("tmpfs", "ramfs"):
        print(
            f"warning: {root} is on {fs_type}: fsync costs nothing there, so the durability "
            "figures will be flattering; pass --dir on a disk filesystem",
            file=sys.stderr,
        )

    started = time.monotonic()
    source_digest, commit = _sandbox_source_digest(), _git_commit()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {message}", file=sys.stderr, flush=True)

    ctx = Context(root=root, sizes=sizes, log=log, mode=args.mode, against=args.against)
    signal.signal(signal.SIGTERM, _end_on_sigterm)
    try:
        ctx.mode = new_store(ctx, "probe").mode
        remove(ctx.path("probe"))
        log(f"stores under {root} ({fs_type}), mode {ctx.mode}")
        if ctx.mode == "copy":
            print(
                "warning: measuring the copy backend (no overlayfs here, or --mode copy): its "
                "checkpoints and forks copy the workdir, so big sizes take long; try --quick",
                file=sys.stderr,
            )
        bench_floor(ctx, "at the start")
        bench_store(ctx)
        bench_network(ctx)
        bench_stored(ctx)
        bench_deep(ctx)
        with reflink_store_fs(ctx) as (mount_point, skipped):
            if mount_point is None:
                log(f"reflink store rows skipped: {skipped}")
                bench_append(ctx, None, skipped)
                ctx.rows.append(
                    Row(
                        "7. reflink store vs plain",
                        "reflink store",
                        "",
                        result=f"SKIPPED: {skipped}",
                    )
                )
            else:
                log(f"reflink store: sprout's store filesystem at {mount_point}")
                reflink = bench_reflink_store(ctx, mount_point)
                bench_append(ctx, reflink, "")
                compare_stores(ctx, reflink)
        bench_floor(ctx, "at the end")
    except BenchError as error:
        print(f"sprout bench sandbox: {error}", file=sys.stderr)
        return 1
    finally:
        remove(root)
    elapsed = time.monotonic() - started

    report = {
        "benchmark": "sandbox",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": shlex.join(sys.argv),
        "cwd": os.getcwd(),
        "sprout_commit": commit,
        "sandbox_source_sha256": source_digest,
        "benchmark_argv": list(argv),
        "machine": facts,
        "store_mode": ctx.mode,
        "sizes": sizes.__dict__,
        "warmup_runs": WARMUP,
        "elapsed_s": round(elapsed, 1),
        "targets": ctx.checks,
        "results": ctx.results,
        "table": [r.__dict__ for r in ctx.rows],
    }
    out = stats.write_json(args.out, report)

    fsinfo = facts["store_filesystem"]
    print(
        f"sprout bench sandbox — {report['date']}, kernel {facts['kernel']}, "
        f"{facts['cpus']} CPUs, store on {fsinfo['type']} ({fsinfo['source']}), "
        f"mode {ctx.mode}, {elapsed:.0f} s"
    )
    print(render_table(ctx.rows, args.markdown))
    missed = [c["target"] for c in ctx.checks if not c["pass"]]
    print(
        f"targets: {len(ctx.checks) - len(missed)}/{len(ctx.checks)} met"
        + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    print(f"results: {out}")
    return 1 if (missed and args.fail_on_miss) else 0
