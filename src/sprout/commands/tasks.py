"""`sprout tasks check`: does each task fail untouched and pass with its reference solution."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sprout.commands.common import (
    UsageError,
    add_isolation_argument,
    add_task_source_arguments,
    check_isolation,
    load_task_arguments,
)
from sprout.runfolder import RunFolder


def add_parser(commands: Any) -> None:
    tasks = commands.add_parser(
        "tasks", help="work with task folders (check)", description="Work with task folders."
    )
    task_commands = tasks.add_subparsers(dest="tasks_command", required=True, metavar="COMMAND")
    check = task_commands.add_parser(
        "check",
        help="check that each task fails untouched and passes with its reference solution",
        description="For each task: build its base layer, run the verifier on the untouched "
        "environment (it must fail), play the reference solution with the oracle model "
        "through the actor and run the verifier again (it must pass). Exit 0 when every "
        "task is sound, 1 when any is broken, 2 for bad input.",
    )
    check.add_argument(
        "paths", nargs="+", metavar="PATHS", help="task folders or folders of task folders"
    )
    check.add_argument(
        "--out",
        metavar="DIR",
        help="keep the run folder here, for `sprout shell DIR ATTEMPT:k` (default: a "
        "temporary folder, removed at the end)",
    )
    check.add_argument(
        "--workers", type=int, default=1, metavar="N", help="tasks checked at once (default 1)"
    )
    add_task_source_arguments(check)
    add_isolation_argument(check)
    check.set_defaults(func=cmd_tasks_check, name="tasks check")


def cmd_tasks_check(args: argparse.Namespace) -> int:
    import shutil
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    from sprout import taskcheck

    if args.workers < 1:
        raise UsageError(f"--workers {args.workers}: expected at least 1")
    loaded = load_task_arguments(args.paths, args)
    results = [taskcheck.load_failure(line) for line in loaded.errors]
    names = [result.task_id for result in results] + [task.id for task in loaded.tasks]
    width = max([len("task"), *map(len, names)])
    print(taskcheck.table_header(width))
    for result in results:
        print(taskcheck.table_row(result, width), flush=True)
    check_isolation(args.out or tempfile.gettempdir(), args.isolation, "tasks check")
    out = args.out or tempfile.mkdtemp(prefix="sprout-check-")
    run = RunFolder.create(out)
    try:
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            for result in pool.map(lambda task: taskcheck.check_task(task, run), loaded.tasks):
                results.append(result)
                print(taskcheck.table_row(result, width), flush=True)
    finally:
        run.close()
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)
    print(taskcheck.summary_line(results))
    for line in taskcheck.detail_lines(results):
        print(line)
    for line in taskcheck.warning_lines(results):
        print(f"warning: {line}", file=sys.stderr)
    if args.out:
        attempts = ", ".join(f"{r.task_id} {r.attempt_id}" for r in results if r.attempt_id)
        print(f"run folder: {args.out}; oracle attempts: {attempts or 'none'}")
        print(f"  open one at turn k with `sprout shell {args.out} ATTEMPT:k`")
    return 0 if all(result.ok for result in results) else 1
