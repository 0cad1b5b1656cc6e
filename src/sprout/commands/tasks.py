"""`sprout tasks check`: does each task fail untouched and pass with its reference solution."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sprout.commands.common import (
    UsageError,
    add_isolation_argument,
    add_task_source_arguments,
    check_isolation,
    load_task_arguments,
)
from sprout.commands.interrupt import INTERRUPTED, handling, stop_at_once
from sprout.runfolder import RunFolder

if TYPE_CHECKING:
    from sprout.pipeline.task_check import CheckResult
    from sprout.task import Task


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
    import tempfile

    from sprout.commands import check_table as table
    from sprout.pipeline import task_check

    if args.workers < 1:
        raise UsageError(f"--workers {args.workers}: expected at least 1")
    loaded = load_task_arguments(args.paths, args)
    results = [task_check.load_failure(line) for line in loaded.errors]
    names = [result.task_id for result in results] + [task.id for task in loaded.tasks]
    width = max([len("task"), *map(len, names)])
    print(table.table_header(width))
    for result in results:
        print(table.table_row(result, width), flush=True)
    check_isolation(args.out or tempfile.gettempdir(), args.isolation, "tasks check")
    try:
        with _terminate_as_interrupt(), _run_folder(args.out) as out:
            run = RunFolder.create(out)
            try:
                _check_all(loaded.tasks, run, args.workers, results, width)
            finally:
                run.close()
    except KeyboardInterrupt:
        checked = len(results) - len(loaded.errors)
        print(
            f"sprout tasks check: interrupted after {checked} of {len(loaded.tasks)} tasks",
            file=sys.stderr,
        )
        return INTERRUPTED
    print(table.summary_line(results))
    for line in table.detail_lines(results):
        print(line)
    for line in table.warning_lines(results):
        print(f"warning: {line}", file=sys.stderr)
    if args.out:
        attempts = ", ".join(f"{r.task_id} {r.attempt_id}" for r in results if r.attempt_id)
        print(f"run folder: {args.out}; oracle attempts: {attempts or 'none'}")
        print(f"  open one at turn k with `sprout shell {args.out} ATTEMPT:k`")
    return 0 if all(result.ok for result in results) else 1


SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""While the checks under way are waited for, either exits at once."""


def _check_all(
    tasks: list[Task], run: RunFolder, workers: int, results: list[CheckResult], width: int
) -> None:
    """Check `tasks` on `workers` threads, printing each row in order as it is known. On
    Ctrl-C the checks not started are dropped and those under way are waited for, so that
    nothing writes in the run folder once it is removed; Ctrl-C again exits at once and
    leaves a temporary folder to the next check, which removes it."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from sprout.commands.check_table import table_row
    from sprout.pipeline import task_check

    pool = ThreadPoolExecutor(max_workers=workers)
    futures: list[Future[CheckResult]] = []
    try:
        futures += [pool.submit(task_check.check_task, task, run) for task in tasks]
        for future in futures:
            result = future.result()
            results.append(result)
            print(table_row(result, width), flush=True)
    except BaseException:
        running = sum(future.running() for future in futures)
        if running:
            print(
                f"\nsprout tasks check: stopping; waiting for the {running} check(s) under "
                "way (Ctrl-C again to exit at once)",
                file=sys.stderr,
                flush=True,
            )
        with handling(SIGNALS, lambda _signal, _frame: stop_at_once("tasks check")):
            pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


@contextlib.contextmanager
def _run_folder(out: str | None) -> Iterator[str]:
    """--out, kept; or a temporary run folder, removed at the end however the check ends."""
    from sprout.pipeline.task_check import scratch_run_folder

    if out:
        yield out
        return
    with scratch_run_folder() as folder:
        yield str(folder)


def _terminate_as_interrupt() -> contextlib.AbstractContextManager[None]:
    """Ctrl-C and SIGTERM end the check alike (its temporary folder removed) while the block
    runs. SIGINT is handled here too, as `sprout run` handles it, rather than left to
    Python's default: a process started with SIGINT ignored (a script's `&`) would
    otherwise go on to the end."""

    def interrupt(_signal: int, _frame: object) -> None:
        raise KeyboardInterrupt

    return handling(SIGNALS, interrupt)
