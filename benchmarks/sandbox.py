"""Sandbox benchmark: what a shell call, a checkpoint and a fork cost, beside their baselines.

Run it with `sprout bench sandbox [options]` (or `make bench`). Every figure is
measured in one process, repeated, and reported as a median (p50) and p90
beside a baseline measured in the same run:

0. a turn in the configuration a user gets (the store on sprout's store filesystem,
   durable checkpoints), beside the store filesystem off, `durable=False` and a bare
   `subprocess` of the same shell: a call, a checkpoint and a fork + first call by phase,
   quiet and with 8 sandboxes busy, then one sandbox's turn tail and 8 sandboxes' turns/s
   over one's (`--turn-only` runs this section alone); with `--against SRC`, a call, a
   checkpoint, the first call after it and a fork + first call of this tree and of
   another, each in processes of its own, alternating (_sandbox/turn_against.py);
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
   program's on the host, all in namespaces the benchmark makes (_sandbox/network_world.py).

The plain store is a `LayerStore` in the store directory, as a run's layers are
with `SPROUT_STORE_FS=off`. As root, where that directory's filesystem cannot clone,
the reflink store is sprout's own store filesystem, made under this benchmark's own
`SPROUT_CACHE` (an 8 GiB sparse image), unmounted and its loop device detached at
the end; rootless, without btrfs, or where the directory clones already, rows 6-7
of the reflink store say why they were skipped.

Results go to a table on stdout and to JSON (`--out`). The stores live in a
temporary directory on the filesystem of the current directory (or `--dir`),
which is deleted at the end.

This module is the command (its options, its run, its report); each section's
measurements are a module of benchmarks/_sandbox/ (floor, calls, checkpoint, fork,
stored, deep, append, reflink, network), over the shared harness of _stats.py.
"""

import argparse
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _stats as stats
import sprout.sandbox
from _sandbox.common import BenchError, Context, Sizes, new_store, remove
from _sandbox.passes import bench_all
from _sandbox.report import document, print_report
from _sandbox.turn import bench_turn


def _add_size_options(parser: argparse.ArgumentParser) -> None:
    """The options that size a run: repeats, the big environment, --quick."""
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


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The benchmark's options; --big-gb's default depends on --quick, so it is noted
    whether it was given."""
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
    _add_size_options(parser)
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
        'sb.run("true") (section 1) and its turns (section 0) are timed in the same run, '
        "alternating with this tree's",
    )
    parser.add_argument(
        "--turn-only",
        action="store_true",
        help="only section 0: a turn in the default configuration, by phase (about a minute)",
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


def _store_root(args: argparse.Namespace) -> str | None:
    """A fresh directory for the stores under --dir (or the current directory), or None
    (with why on stderr) where there is none to make or its path would not mount."""
    parent = os.path.abspath(args.dir if args.dir else os.getcwd())
    if not os.path.isdir(parent):
        print(f"sprout bench sandbox: --dir {parent}: not a directory", file=sys.stderr)
        return None
    root = tempfile.mkdtemp(prefix=".sprout-bench-", dir=parent)
    if any(c in root for c in ":,\n"):
        os.rmdir(root)
        print(f"sprout bench sandbox: {root}: ':' or ',' in the path", file=sys.stderr)
        return None
    return root


COPY_WARNING = (
    "warning: measuring the copy backend (no overlayfs here, or --mode copy): its "
    "checkpoints and forks copy the workdir, so big sizes take long; try --quick"
)


def main(argv: list[str]) -> int:
    args = parse_args(list(argv))
    sizes = Sizes.from_args(args)
    root = _store_root(args)
    if root is None:
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
    provenance = (_git_commit(), _sandbox_source_digest())

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {message}", file=sys.stderr, flush=True)

    ctx = Context(root=root, sizes=sizes, log=log, mode=args.mode, against=args.against)
    signal.signal(signal.SIGTERM, _end_on_sigterm)
    try:
        ctx.mode = new_store(ctx, "probe").mode
        remove(ctx.path("probe"))
        log(f"stores under {root} ({fs_type}), mode {ctx.mode}")
        if ctx.mode == "copy":
            print(COPY_WARNING, file=sys.stderr)
        if args.turn_only:
            bench_turn(ctx)
        else:
            bench_all(ctx)
    except BenchError as error:
        print(f"sprout bench sandbox: {error}", file=sys.stderr)
        return 1
    finally:
        remove(root)
    elapsed = time.monotonic() - started
    report = document(ctx, list(argv), facts, provenance, elapsed)
    out = stats.write_json(args.out, report)
    missed = print_report(ctx, report, elapsed, out, args.markdown)
    return 1 if (missed and args.fail_on_miss) else 0
