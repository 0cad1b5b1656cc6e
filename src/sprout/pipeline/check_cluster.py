"""`sprout tasks check --ray`: each task's check as a Ray task on a node of the cluster
`ray.init` joined, in a temporary run folder of its own there, removed when the check
ends; the `CheckResult` comes back to the driver, which prints and records it.

A check needs nothing of the driver but the task: its folder travels through Ray's object
store as `sprout run --ray` ships it (`sprout.cluster.task_ship`), and its sandboxes
refuse the cluster's nodes as a run's do. A SWE-bench row's task is no folder and travels
whole.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import ray
from ray.exceptions import RayError

from sprout.cluster.sandboxes import refused_addresses
from sprout.cluster.task_ship import ShippedFolder, cache_root, folder_here, relocated, ship
from sprout.pipeline.task_check import (
    CheckResult,
    Report,
    check_task,
    one_line,
    scratch_run_folder,
)
from sprout.runfolder import RunFolder
from sprout.sandbox import refuse_addresses
from sprout.task import Task, TaskError
from sprout.workspace import WorkspaceError

Stopping = Callable[[int], contextlib.AbstractContextManager[None]]
"""Told how many checks are under way when the checks stop early; its block waits for them."""


def check_on_cluster(
    tasks: Sequence[Task], workers: int, stopping: Stopping, report: Report
) -> None:
    """Check `tasks`, at most `workers` at once, each result `report`ed as it is known. When
    stopped early (Ctrl-C, a fault) the checks under way are cancelled and waited for within
    `stopping`'s block, so each removes its run folder on its node on its way out; those
    that finished all the same are reported."""
    refused = refused_addresses()
    waiting = iter(tasks)
    running: list[Any] = []
    try:
        while True:
            while len(running) < workers and (task := next(waiting, None)) is not None:
                try:
                    shipped = ship(task)
                except TaskError as error:  # a link out of its folder: this task's problem
                    report(_broken(task, error))
                    continue
                running.append(_check_on_node.remote(task, shipped, refused))
            if not running:
                return
            (done,), _ = ray.wait(running, num_returns=1)
            running.remove(done)
            report(ray.get(done))
    except BaseException:
        with stopping(len(running)):
            for ref in running:
                ray.cancel(ref)
            if running:
                ray.wait(running, num_returns=len(running))
            for ref in running:
                with contextlib.suppress(RayError):  # cancelled, as asked
                    report(ray.get(ref))
        raise


def _check_on_this_node(
    task: Task, shipped: ShippedFolder | None, refused: tuple[str, ...]
) -> CheckResult:
    """`task` checked on this node, in a temporary run folder of its own."""
    refuse_addresses(list(refused))
    try:
        if shipped is not None:
            task = relocated(task, folder_here(task, shipped, cache_root()))
    except (TaskError, WorkspaceError) as error:
        return _broken(task, error)
    with scratch_run_folder() as folder:
        run = RunFolder.create(str(folder))
        try:
            # every task's shipped folder on this machine (tests, solution) out of every sandbox
            run.layers.host.hide([cache_root()])
            return check_task(task, run)
        finally:
            run.close()


_check_on_node = ray.remote(scheduling_strategy="SPREAD")(_check_on_this_node)
"""One core each (Ray's default), spread over the nodes as far as their cores allow."""


def _broken(task: Task, error: Exception) -> CheckResult:
    """`task` broken by `error`, which names the task first as the table does."""
    return CheckResult(task.id, problem=one_line(str(error).removeprefix(f"{task.id}: ")))
