"""The `sprout` command. Each subcommand parses its arguments and calls a module."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sprout.commands import doctor as doctor_command
from sprout.commands import image as image_command
from sprout.commands import run as run_command
from sprout.commands import tasks as tasks_commands
from sprout.commands import train as train_commands
from sprout.commands.common import BAD_INPUT, UsageError
from sprout.commands.interrupt import INTERRUPTED
from sprout.images import ImageError
from sprout.models import ModelError
from sprout.runfolder import RunFolder, RunFolderError, parse_checkpoint_ref
from sprout.sandbox import LayerStore, Sandbox, SandboxError, UnknownCheckpoint
from sprout.store import StoreError
from sprout.task import TaskError
from sprout.tree import TreeError


def _benchmarks_dir() -> Path:
    """benchmarks/ of the source checkout (the package is installed in editable mode)."""
    configured = os.environ.get("SPROUT_BENCHMARKS")
    candidates = [Path(configured)] if configured else []
    candidates += [Path(__file__).resolve().parents[2] / "benchmarks", Path.cwd() / "benchmarks"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise UsageError(
        "benchmarks/: not found beside the source tree or in the current directory; "
        "run from a checkout of sprout-rl or set SPROUT_BENCHMARKS"
    )


def available_benchmarks() -> list[str]:
    try:
        return sorted(p.stem for p in _benchmarks_dir().glob("*.py") if not p.stem.startswith("_"))
    except UsageError:
        return []


def cmd_bench(args: argparse.Namespace) -> int:
    path = _benchmarks_dir() / f"{args.name}.py"
    if not path.is_file():
        names = ", ".join(available_benchmarks()) or "none found"
        raise UsageError(f"bench {args.name}: no such benchmark (available: {names})")
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # so a benchmark imports its siblings (_stats)
    spec = importlib.util.spec_from_file_location(f"sprout_bench_{args.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return int(module.main(args.options))


def cmd_gc(args: argparse.Namespace) -> int:
    verb = "would free" if args.dry_run else "freed"
    dry = " (--dry-run: nothing was freed)" if args.dry_run else ""
    if args.store is None:
        from sprout.images.gc import collect

        if args.keep or args.run:
            raise UsageError(
                "--keep and --run need a STORE (the machine's cache keeps what runs link)"
            )
        if not args.keep_days >= 0:
            raise UsageError(f"--keep-days: expected a number of days >= 0, got {args.keep_days}")
        done = collect(keep_days=args.keep_days, images=args.images, dry_run=args.dry_run)
        if args.list:
            for name in done.names:
                print(f"  base layer {name}")
            for digest in done.images:
                print(f"  image {digest}")
        print(
            f"{verb} {done.bytes_freed / 1e6:.1f} MB: {done.bases} base layers "
            f"({len(done.layers)} layers), {len(done.images)} images{dry}"
        )
        return 0
    store_path, databases = _gc_target(args.store)
    databases += [_run_database(run) for run in args.run]
    store = LayerStore(store_path)
    for layer_id in args.keep:
        try:
            store.layer(layer_id)
        except UnknownCheckpoint:
            raise UsageError(f"--keep {layer_id}: no such checkpoint in {store_path}") from None
    shared_users = os.path.isdir(os.path.join(store_path, "users"))

    def references() -> set[str]:
        """Read once the store is locked: what every run folder's database references, and,
        in a store of the machine's cache, what run folders link."""
        from sprout.store import referenced_checkpoints

        found: set[str] = set()
        for database in databases:
            try:
                found |= referenced_checkpoints(database)
            except StoreError as error:
                raise UsageError(
                    f"{error}; nothing was freed (gc keeps what it references)"
                ) from None
        if shared_users:
            from sprout.images.bases import linked_by_runs

            found |= linked_by_runs(store)
        return found

    if shared_users:  # a store of the machine's cache: no base layer is built meanwhile
        from sprout.images.bases import collecting

        with collecting(store):
            freed = store.collect(keep=args.keep, references=references, dry_run=args.dry_run)
    else:
        freed = store.collect(keep=args.keep, references=references, dry_run=args.dry_run)
    if freed.missing:
        shown = ", ".join(freed.missing[:5]) + (", ..." if len(freed.missing) > 5 else "")
        print(
            f"sprout gc: warning: {len(freed.missing)} checkpoints that runs reference are "
            f"not in {store_path} (freed before, or never sealed): {shown}",
            file=sys.stderr,
        )
    if args.list:
        for layer_id in freed.layers:
            print(f"  layer {layer_id}")
        for layer_id in freed.debris:
            print(f"  debris {layer_id}")
    runs = f"{len(databases)} run{'s' if len(databases) != 1 else ''}"
    print(
        f"{verb} {freed.bytes_freed / 1e6:.1f} MB: {len(freed.layers)} layers no checkpoint "
        f"needs, {len(freed.debris)} left by dead processes; {freed.kept} layers kept for "
        f"{runs}, named checkpoints and --keep{dry}"
    )
    return 0


def _gc_target(path: str) -> tuple[str, list[Path]]:
    """The layer store that `sprout gc PATH` collects (PATH is a store, or a run folder) and
    the database beside it, whose checkpoints it keeps."""
    if os.path.isfile(os.path.join(path, "store.json")):
        beside = Path(path).resolve().parent / "sprout.db"
        return path, [beside] if beside.exists() else []
    folder = Path(path)
    if (folder / "sprout.db").exists() and (folder / "layers" / "store.json").is_file():
        return str(folder / "layers"), [folder / "sprout.db"]
    raise UsageError(
        f"{path}: not a layer store (no store.json) nor a run folder (sprout.db and layers/)"
    )


def _run_database(run: str) -> Path:
    database = Path(run) / "sprout.db"
    if not database.exists():
        raise UsageError(f"--run {run}: not a run folder (no sprout.db)")
    return database


def cmd_shell(args: argparse.Namespace) -> int:
    attempt_id, boundary = parse_checkpoint_ref(args.checkpoint)
    run = RunFolder.open(args.run)
    try:
        tree = run.tree
        attempt = tree.attempt(attempt_id)
        boundary = tree.last_index(attempt) if boundary is None else boundary
        checkpoint = tree.checkpoint(attempt, boundary)
        try:
            sandbox = Sandbox.fork(run.layers, checkpoint)
        except UnknownCheckpoint as error:
            raise UsageError(
                f"{args.checkpoint}: its layer {error.checkpoint_id} is gone from "
                f"{run.layers.path} (freed by a gc, or the store was moved); the turns are "
                "still in sprout.db, their files are not"
            ) from None
        with sandbox:
            print(
                f"sprout shell: attempt {attempt_id} after turn {boundary} (layer {checkpoint}), "
                f"in {sandbox.config.workdir}; a throw-away fork: changes go when you exit",
                file=sys.stderr,
            )
            return sandbox.shell()
    finally:
        run.close()


def cmd_view(args: argparse.Namespace) -> int:
    from sprout.viewer.server import serve

    try:
        return serve(args.run, args.port)
    except OSError as error:
        raise UsageError(f"--port {args.port}: cannot listen on 127.0.0.1 ({error})") from None


def _image_table(path: str | None) -> dict[str, str] | None:
    if path is None:
        return None
    from sprout.tasks.discover import load_image_table

    return load_image_table(path)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sprout",
        description="Checkpoint every turn of a coding agent; branch from the turn before "
        "the mistake.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    bench = commands.add_parser(
        "bench",
        help="run a benchmark from benchmarks/ (sandbox, search, learner, viewer)",
        description="Run benchmarks/NAME.py; options after NAME go to the benchmark "
        "(try `sprout bench sandbox --help`).",
    )
    bench.add_argument("name", metavar="NAME", help="benchmark name, e.g. sandbox")
    bench.add_argument("options", nargs=argparse.REMAINDER, help="options for the benchmark")
    bench.set_defaults(func=cmd_bench)

    gc = commands.add_parser(
        "gc",
        help="free the machine's cache (images, base layers) or a layer store's unused layers",
        description="Without STORE: free the base layers of the machine's cache (SPROUT_CACHE, "
        "default ~/.cache/sprout) that no run folder on this machine links and nobody used for "
        "--keep-days, and with --images the images no remaining base layer stands on. With "
        "STORE (a layer store, or a run folder for its layers/): free every layer that no "
        "checkpoint of the run beside it (its sprout.db), of a --run, a named checkpoint, a "
        "--keep or an open sandbox stacks on, and what killed processes left. Refuses while "
        "a process uses the store (a run, a shell, the viewer).",
    )
    gc.add_argument(
        "store", metavar="STORE", nargs="?", help="a layer store, or a run folder (its layers/)"
    )
    gc.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="RUNDIR",
        help="with STORE: also keep every checkpoint the run in RUNDIR references (repeatable)",
    )
    gc.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="ID",
        help="with STORE: a checkpoint id to keep, with all it stacks on (repeatable)",
    )
    gc.add_argument(
        "--keep-days",
        type=float,
        default=7.0,
        metavar="N",
        help="keep cached base layers used in the last N days (default 7; 0: only in-use)",
    )
    gc.add_argument("--images", action="store_true", help="also remove images nothing uses")
    gc.add_argument("--dry-run", action="store_true", help="say what would be freed; free nothing")
    gc.add_argument(
        "-v", "--list", action="store_true", help="name each layer (or base, image) freed"
    )
    gc.set_defaults(func=cmd_gc)

    shell = commands.add_parser(
        "shell",
        help="an interactive shell in a throw-away fork of any stored checkpoint",
        description="Open a shell in a throw-away fork of checkpoint ATTEMPT:k of a run "
        "(k = 0 is the untouched task; ATTEMPT alone means its last turn). "
        "Nothing you do there is saved.",
    )
    shell.add_argument("run", metavar="RUN", help="run folder (holds sprout.db and layers/)")
    shell.add_argument("checkpoint", metavar="ATTEMPT:k", help="attempt id and turn boundary")
    shell.set_defaults(func=cmd_shell)

    view = commands.add_parser(
        "view",
        help="the episode viewer: a run's search trees in the browser, on 127.0.0.1",
        description="Serve the episode viewer of RUN on 127.0.0.1:PORT: every task's tree "
        "of attempts, each turn in full, the verifier's, analyst's and reviewer's notes, and "
        "the methods side by side (docs/viewer.md). A run still being written updates live.",
    )
    view.add_argument("run", metavar="RUN_DIR", help="run folder (holds sprout.db and layers/)")
    view.add_argument(
        "--port", type=int, default=8000, metavar="P", help="port on 127.0.0.1 (default 8000)"
    )
    view.set_defaults(func=cmd_view)

    run_command.add_parser(commands)
    doctor_command.add_parser(commands)
    image_command.add_parser(commands)
    train_commands.add_parsers(commands)
    tasks_commands.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (
        UsageError,
        ImageError,
        SandboxError,
        TreeError,
        RunFolderError,
        StoreError,
        TaskError,
        ModelError,
    ) as error:
        print(f"sprout {getattr(args, 'name', args.command)}: {error}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print(f"\nsprout {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
