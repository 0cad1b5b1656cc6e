"""`sprout export`: a run's groups as training records, or tasks as verl's dataset."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from sprout.commands.common import IMAGE_MODES, UsageError, add_task_source_arguments, usable_tasks
from sprout.errors import BAD_INPUT
from sprout.train.credit import CREDITS
from sprout.train.export import FORMATS

if TYPE_CHECKING:
    from sprout.integrations.verl.rows import TaskOptions

DATASET = "verl-dataset"
"""`sprout export`'s format that is no run's records: tasks as the rows verl's `sprout`
agent loop trains on (sprout.integrations.verl.rows, imported only when asked for)."""
RECORD_OPTIONS = {
    "method": "--method",
    "credit": "--credit",
    "no_starting_turn": "--no-starting-turn",
    "max_length": "--max-length",
    "drop_overlong": "--drop-overlong",
}
"""`sprout export`'s options of a run's records (argument dest -> flag)."""
TASK_OPTIONS = {
    "images": "--images",
    "images_from": "--images-from",
    "repos": "--repos",
    "run_scripts": "--run-scripts",
    "swe_gym": "--swe-gym",
    "swe_smith": "--swe-smith",
}
"""`sprout export`'s options of the tasks it reads for verl-dataset (dest -> flag)."""


def add_parser(commands: Any) -> None:
    export = commands.add_parser(
        "export",
        help="write a run's GRPO groups as training records for verl, TRL or sprout (jsonl), "
        "or tasks as the dataset verl's `sprout` agent loop trains on (verl-dataset)",
        description="Build the token-exact samples of every finished group of RUN (a task's "
        "rollouts under one method) with their advantages, and write them to FILE as JSON "
        "Lines records of --format (docs/training.md shows how each trainer loads them). "
        "With --format verl-dataset, write the tasks under TASKS (task folders, folders of "
        "them or files of rows, as `sprout run` takes them, read with the task-source "
        "options below) to FILE.parquet as the rows verl's `sprout` agent loop trains on "
        "(docs/integrations.md); the rows say how each task is read, not how its image is "
        "had, so --images takes a table FILE only and --images-from is refused.",
    )
    export.add_argument(
        "paths",
        nargs="+",
        metavar="RUN|TASKS",
        help="the run folder (holds sprout.db); for verl-dataset, the task paths",
    )
    export.add_argument(
        "--format",
        required=True,
        choices=(*FORMATS, DATASET),
        help="the records' format, or verl-dataset for the tasks as verl's rows",
    )
    export.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="the .jsonl file to write (a .parquet file for verl-dataset)",
    )
    export.add_argument(
        "--method",
        action="append",
        metavar="NAME",
        help="export only this method's groups (repeatable; default: every method)",
    )
    export.add_argument(
        "--credit", choices=CREDITS, help="how advantages are computed (default grpo)"
    )
    export.add_argument(
        "--no-starting-turn",
        action="store_true",
        help="do not train the reviewer-written starting turns (default: trained)",
    )
    export.add_argument(
        "--max-length", type=int, metavar="N", help="refuse samples longer than N tokens"
    )
    export.add_argument(
        "--drop-overlong",
        action="store_true",
        help="with --max-length: leave longer samples out (named) instead of refusing",
    )
    add_task_source_arguments(export)
    export.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    if args.format == DATASET:
        _only_with(args, RECORD_OPTIONS, "jsonl, verl or trl")
        return _export_dataset(args)
    _only_with(args, TASK_OPTIONS, DATASET)
    if len(args.paths) > 1:
        raise UsageError(
            f"{' '.join(args.paths)}: --format {args.format} exports one run folder, RUN "
            f"(task paths are for --format {DATASET})"
        )
    from sprout.pipeline.export import export_run

    path, report = export_run(
        args.paths[0],
        args.format,
        args.out,
        methods=args.method or None,
        credit=args.credit or "grpo",
        train_starting_turn=not args.no_starting_turn,
        max_length=args.max_length,
        overlong="drop" if args.drop_overlong else "error",
    )
    print(f"{report.describe()}\n{args.format} records: {path}")
    for line in (*report.unfinished, *report.dropped):
        print(f"  left out: {line}", file=sys.stderr)
    return 0


def _only_with(args: argparse.Namespace, options: dict[str, str], formats: str) -> None:
    """UsageError for the first of `options` (dest -> flag) given: it applies only to
    `formats`."""
    for dest, flag in options.items():
        if getattr(args, dest):
            raise UsageError(f"{flag}: only with --format {formats}")


def _export_dataset(args: argparse.Namespace) -> int:
    """`sprout export --format verl-dataset`: the tasks under the paths, read as the loop
    will read them, written as verl's rows; exit 2 (after writing the others) when some
    did not load, as `sprout run` does."""
    from sprout.integrations.verl.rows import (
        DatasetError,
        dataset_path,
        dataset_rows,
        write_dataset,
    )
    from sprout.tasks import load_tasks

    try:
        dataset_path(args.out)
    except DatasetError as error:
        raise UsageError(f"--out {error}") from None
    options = _dataset_options(args)
    loaded = usable_tasks(load_tasks(args.paths, **options.keywords()), "export")
    path = write_dataset(dataset_rows(loaded.tasks, options), args.out)
    print(f"{len(loaded.tasks)} tasks\n{DATASET} rows: {path}")
    return BAD_INPUT if loaded.errors else 0


def _dataset_options(args: argparse.Namespace) -> TaskOptions:
    """The task-source options given, as absolute paths (a verl worker starts in another
    folder); UsageError for an image mode or --images-from, which choose images, not tasks."""
    from sprout.integrations.verl.rows import TaskOptions

    if args.images_from:
        raise UsageError(f"--images-from: not with --format {DATASET} (it picks images)")
    tables = [value for value in args.images if value not in IMAGE_MODES]
    if len(tables) < len(args.images):
        mode = next(value for value in args.images if value in IMAGE_MODES)
        raise UsageError(f"--images {mode}: not with --format {DATASET}; give a table FILE")
    if len(tables) > 1:
        raise UsageError(f"--images {' '.join(tables)}: at most one table file")

    def absolute(path: str | None) -> str | None:
        return None if path is None else os.path.abspath(path)

    python = args.swe_smith  # a name without a slash is looked up on PATH where it runs
    return TaskOptions(
        images=absolute(tables[0]) if tables else None,
        repos=absolute(args.repos),
        run_scripts=absolute(args.run_scripts),
        swe_gym=absolute(args.swe_gym),
        swe_smith=absolute(python) if python and os.sep in python else python,
    )
