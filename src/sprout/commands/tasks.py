"""`sprout tasks check`: does each task fail untouched and pass with its reference solution."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import tempfile
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
from sprout.commands.ray_options import add_ray_address, joined, require_ray
from sprout.runfolder import RunFolder

if TYPE_CHECKING:
    from sprout.pipeline.check_record import CheckRecord, ResultsFile
    from sprout.pipeline.task_check import CheckResult, Report
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
    check.add_argument(
        "--results",
        metavar="FILE",
        help="record each finished check in FILE (JSON Lines) as it ends; started again "
        "with the same FILE, the tasks it records are not checked again, their rows printed "
        "from it (docs/tasks.md)",
    )
    add_ray_address(
        check,
        "check each task",
        ", in a temporary run folder of its own on its node; --workers checks at once "
        "(docs/tasks.md)",
    )
    add_task_source_arguments(check)
    add_isolation_argument(check)
    check.set_defaults(func=cmd_tasks_check, name="tasks check")


def _check_options(args: argparse.Namespace) -> None:
    """The options' mistakes, before anything loads: one line each, exit 2."""
    if args.workers < 1:
        raise UsageError(f"--workers {args.workers}: expected at least 1")
    if args.ray is not None:
        if args.out:
            raise UsageError(
                "--out: not with --ray: each check's run folder is on its node, removed when "
                "the check ends"
            )
        require_ray()


def _print_summary(records: list[CheckRecord], from_file: int, results: str | None) -> None:
    """The summary line, each broken task's detail, and the warnings on stderr."""
    from sprout.commands import check_table as table

    print(table.summary_line(records, from_file, results or ""))
    for line in table.detail_lines(records):
        print(line)
    for line in table.warning_lines(records):
        print(f"warning: {line}", file=sys.stderr)


def cmd_tasks_check(args: argparse.Namespace) -> int:
    from sprout.pipeline.check_record import ResultsFile

    _check_options(args)
    if not args.results:
        return _check_tasks(args, None)
    with contextlib.closing(ResultsFile.open(args.results)) as results:  # one check writes it
        return _check_tasks(args, results)


def _check_tasks(args: argparse.Namespace, results: ResultsFile | None) -> int:
    """Check the tasks `args` names, each result recorded in `results` (and those it
    records already printed from it, not checked again)."""
    from sprout.commands import check_table as table
    from sprout.pipeline import task_check

    loaded = load_task_arguments(args.paths, args)
    earlier = results.earlier if results else {}
    tasks = [task for task in loaded.tasks if task.id not in earlier]
    failures = [table.record_of(task_check.load_failure(e), loaded=False) for e in loaded.errors]
    names = [record.task_id for record in failures] + [task.id for task in loaded.tasks]
    width = max([len("task"), *map(len, names)])
    from_file = len(loaded.tasks) - len(tasks)
    records: list[CheckRecord] = []
    attempts: list[str] = []

    def show(record: CheckRecord, *, recorded: bool = False) -> None:
        records.append(record)
        print(table.table_row(record, width, recorded=recorded), flush=True)

    print(table.table_header(width))
    for record in failures:
        if results:
            results.append(record)
        show(record)
    for task in loaded.tasks:
        if task.id in earlier:
            show(earlier[task.id], recorded=True)
    check_isolation(args.out or tempfile.gettempdir(), args.isolation, "tasks check")

    def report(result: CheckResult) -> None:
        """A finished check: recorded first, so that a row on screen is one on disk."""
        record = table.record_of(result)
        if results:
            results.append(record)
        show(record)
        if result.attempt_id is not None:
            attempts.append(f"{result.task_id} {result.attempt_id}")

    try:
        with _terminate_as_interrupt():
            _check(tasks, args, report)
    except KeyboardInterrupt:
        checked = len(records) - len(failures) - from_file
        then = f"; the same command with --results {args.results} goes on" if results else ""
        print(
            f"sprout tasks check: interrupted after {checked} of {len(tasks)} tasks{then}",
            file=sys.stderr,
        )
        return INTERRUPTED
    _print_summary(records, from_file, args.results)
    if args.out and tasks:
        print(f"run folder: {args.out}; oracle attempts: {', '.join(attempts) or 'none'}")
        print(f"  open one at turn k with `sprout shell {args.out} ATTEMPT:k`")
    return 0 if all(record.ok for record in records) else 1


SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""While the checks under way are waited for, either exits at once."""


def _check(tasks: list[Task], args: argparse.Namespace, report: Report) -> None:
    """Check `tasks`, each result `report`ed as it is known: on --ray's cluster, else here in
    --out's run folder (or a temporary one). Nothing is made or joined when there is nothing
    to check (every task recorded in --results)."""
    if not tasks:
        return
    if args.ray is not None:
        from sprout.pipeline.check_cluster import check_on_cluster

        with joined(args.ray):
            check_on_cluster(tasks, args.workers, _stopping, report)
        return
    with _run_folder(args.out) as out:
        run = RunFolder.create(out)
        try:
            _check_here(tasks, run, args.workers, report)
        finally:
            run.close()


def _check_here(tasks: list[Task], run: RunFolder, workers: int, report: Report) -> None:
    """Check `tasks` on `workers` threads, each result `report`ed as it finishes. When
    stopped early the checks not started are dropped and those under way are waited for
    (and reported), so that nothing writes in the run folder once it is removed."""
    from concurrent.futures import Future, ThreadPoolExecutor, as_completed

    from sprout.pipeline import task_check

    pool = ThreadPoolExecutor(max_workers=workers)
    futures: list[Future[CheckResult]] = []
    unreported: set[Future[CheckResult]] = set()
    try:
        futures += [pool.submit(task_check.check_task, task, run) for task in tasks]
        unreported.update(futures)
        for future in as_completed(futures):
            unreported.discard(future)
            report(future.result())
    except BaseException:
        with _stopping(sum(future.running() for future in futures)):
            pool.shutdown(wait=True, cancel_futures=True)
            for future in futures:
                if future in unreported and not future.cancelled() and not future.exception():
                    report(future.result())
        raise
    pool.shutdown(wait=True)


@contextlib.contextmanager
def _stopping(running: int) -> Iterator[None]:
    """While the `running` checks under way are waited for after Ctrl-C (or a fault): Ctrl-C
    again exits at once, and leaves a temporary folder to the next check, which removes it."""
    if running:
        print(
            f"\nsprout tasks check: stopping; waiting for the {running} check(s) under way "
            "(Ctrl-C again to exit at once)",
            file=sys.stderr,
            flush=True,
        )
    with handling(SIGNALS, lambda _signal, _frame: stop_at_once("tasks check")):
        yield


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
