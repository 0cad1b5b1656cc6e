"""The `sprout` command. Each subcommand parses its arguments and calls a module."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sprout import __version__
from sprout.commands import doctor as doctor_command
from sprout.commands import export as export_command
from sprout.commands import gc as gc_command
from sprout.commands import image as image_command
from sprout.commands import mini_batch as mini_batch_command
from sprout.commands import run as run_command
from sprout.commands import shell as shell_command
from sprout.commands import tasks as tasks_commands
from sprout.commands import train as train_commands
from sprout.commands.common import UsageError
from sprout.commands.interrupt import INTERRUPTED
from sprout.errors import SproutError


def _benchmarks_dir() -> Path:
    """benchmarks/ of the source checkout (the package is installed in editable mode), or
    the folder `SPROUT_BENCHMARKS` names: one that is no folder is refused, not passed over
    for the checkout's, which would run other benchmarks than the ones asked for."""
    configured = os.environ.get("SPROUT_BENCHMARKS")
    if configured and not Path(configured).is_dir():
        raise UsageError(
            f"SPROUT_BENCHMARKS: {configured} is not a folder (expected the benchmarks/ "
            "folder of a sprout-rl checkout)"
        )
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
    """The benchmarks in benchmarks/, read from the folder: each module there whose name
    does not start with `_` (those are the benchmarks' shared parts)."""
    try:
        return sorted(p.stem for p in _benchmarks_dir().glob("*.py") if not p.stem.startswith("_"))
    except UsageError:
        return []


def cmd_bench(args: argparse.Namespace) -> int:
    path = _benchmarks_dir() / f"{args.benchmark}.py"
    if not path.is_file():
        names = ", ".join(available_benchmarks()) or "none found"
        raise UsageError(f"{args.benchmark}: no such benchmark (available: {names})")
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # so a benchmark imports its siblings (_stats)
    spec = importlib.util.spec_from_file_location(f"sprout_bench_{args.benchmark}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return int(module.main(args.options))


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
    parser.add_argument("--version", action="version", version=f"sprout-rl {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    benchmarks = ", ".join(available_benchmarks()) or "none: run from a checkout of sprout-rl"
    bench = commands.add_parser(
        "bench",
        help=f"run a benchmark from benchmarks/ ({benchmarks})",
        description=f"Run benchmarks/NAME.py; options after NAME go to the benchmark "
        f"(try `sprout bench sandbox --help`). Benchmarks: {benchmarks}.",
    )
    bench.add_argument("benchmark", metavar="NAME", help="benchmark name, e.g. sandbox")
    bench.add_argument("options", nargs=argparse.REMAINDER, help="options for the benchmark")
    bench.set_defaults(func=cmd_bench)

    shell_command.add_parser(commands)

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
    mini_batch_command.add_parser(commands)
    doctor_command.add_parser(commands)
    gc_command.add_parser(commands)
    image_command.add_parser(commands)
    export_command.add_parser(commands)
    train_commands.add_parsers(commands)
    tasks_commands.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except SproutError as error:
        print(f"sprout {getattr(args, 'name', args.command)}: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(f"\nsprout {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
