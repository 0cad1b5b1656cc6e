"""What the `sprout` subcommands share: the bad-input error and how tasks are named."""

from __future__ import annotations

import argparse
import sys

from sprout.tasks import LoadedTasks

BAD_INPUT = 2


class UsageError(Exception):
    """Bad input found after parsing: printed as one line, exit code 2."""


def add_task_source_arguments(parser: argparse.ArgumentParser) -> None:
    """--images and --repos: where Dockerfile images and SWE-bench clones are found."""
    parser.add_argument(
        "--images", metavar="FILE", help="TOML [images] table: FROM name -> root-filesystem folder"
    )
    parser.add_argument("--repos", metavar="DIR", help="local clones of SWE-bench repositories")


def load_task_arguments(paths: list[str], args: argparse.Namespace) -> LoadedTasks:
    """The tasks under `paths` (with --images and --repos), every one that failed to load."""
    from sprout.tasks import load_tasks
    from sprout.tasks.discover import load_image_table

    images = load_image_table(args.images) if args.images else None
    return load_tasks(paths, images=images, repos=args.repos)


def usable_tasks(loaded: LoadedTasks, command: str) -> LoadedTasks:
    """Say which tasks were skipped and why (and each task warning once); refuse a run
    with no task left."""
    from sprout.tasks.discover import grouped_warnings

    for error in loaded.errors:
        print(f"sprout {command}: skipped: {error}", file=sys.stderr)
    for line in grouped_warnings((task.id, task.warnings) for task in loaded.tasks):
        print(f"warning: {line}", file=sys.stderr)
    if not loaded.tasks:
        raise UsageError("no task could be loaded (see the lines above)")
    return loaded
