"""What a task's actor reserves on a Ray cluster (cores and memory), and what `--ray-memory`
changes: a node holds no more tasks than it has memory for, a reservation no node has ends
the task's pairs in error in one line instead of waiting forever, and `--ray-memory 0`
reserves none; a run without `--workers` keeps as many attempts alive as the nodes hold
reservations, on every node. The cluster runs are `sprout run` processes on a real
`ray.cluster_utils.Cluster` whose nodes have the cores and memory each test names.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout.cluster.reservation import Reservation, check_fits, cluster_room, reservation
from sprout.commands.ray_options import ray_memory
from sprout.runfolder import RunFolder
from sprout.task import Task
from sprout.workspace import WorkspaceError
from tests.support.ray_cluster import GIB, ONE_CORE, TWO_WORKERS, cluster_of
from tests.support.ray_runs import finished, placements, sealed_in
from tests.support.repo_paths import EXAMPLE_TASKS, SPROUT

pytest.importorskip("ray.cluster_utils", reason="--ray needs Ray: pip install 'sprout-rl[dist]'")

REFUSED_TIMEOUT_S = 90
"""A run whose only task no node can hold: start, join, refuse, write the run's results."""
SANDBOX_MEMORY = 4 * GIB
"""The example tasks' sandbox memory limit: they set none, so the sandbox's default."""


def task(**fields: Any) -> Task:
    return Task(id="t", path=Path("/nowhere"), instruction="", **fields)


def test_a_task_reserves_its_sandbox_memory_once_per_command_it_runs_at_once() -> None:
    assert reservation(task(), 1.0, None).memory == SANDBOX_MEMORY
    assert reservation(task(), 0.5, None).memory == SANDBOX_MEMORY, "one command at least"
    assert reservation(task(), 3.0, None).memory == 3 * SANDBOX_MEMORY
    assert reservation(task(memory_bytes=GIB), 2.0, None).memory == 2 * GIB
    assert reservation(task(memory_bytes=0), 2.0, None).memory == 0, "no limit, no reservation"
    assert reservation(task(memory_bytes=GIB), 2.0, 5).memory == 5, "--ray-memory wins"
    assert reservation(task(), 2.5, None).slots == 2


@pytest.mark.parametrize(
    ("text", "size"),
    [("512M", 512 << 20), ("8G", 8 * GIB), ("8GiB", 8 * GIB), ("1000", 1000), ("0", 0)],
)
def test_ray_memory_reads_sizes(text: str, size: int) -> None:
    assert ray_memory(argparse.Namespace(ray_memory=text)) == size


def test_a_reservation_no_node_has_is_one_line_naming_what_to_change() -> None:
    nodes = [{"CPU": 4.0, "memory": 3.0 * GIB}, {"CPU": 1.0, "memory": 8.0 * GIB}]
    check_fits("t", Reservation(1.0, 8 * GIB, "--ray-memory"), nodes)
    check_fits("t", Reservation(4.0, 3 * GIB, "--ray-memory"), nodes)

    with pytest.raises(WorkspaceError) as memory:
        check_fits("t", Reservation(1.0, 9 * GIB, "--ray-memory"), nodes)
    assert str(memory.value) == (
        "t: no node of the cluster can hold it: it needs 9.00 GiB of memory (--ray-memory) on "
        "a node with 1 cores, and the largest such node has 8.00 GiB: set a smaller "
        "--ray-memory (0 reserves none)"
    )
    with pytest.raises(WorkspaceError) as cores:
        check_fits("t", Reservation(5.0, 0, "--ray-memory"), nodes)
    assert str(cores.value).endswith("needs 5 cores (--ray-cpus), and the largest node has 4")
    with pytest.raises(WorkspaceError, match=r"the largest such node has 3\.00 GiB"):
        check_fits("t", Reservation(4.0, 8 * GIB, "--ray-memory"), nodes)
    with pytest.raises(WorkspaceError, match=r"the largest node has 0$"):
        check_fits("t", Reservation(1.0, 0, "--ray-memory"), [])


def test_the_clusters_room_is_the_reservations_its_nodes_hold_times_their_commands() -> None:
    nodes = [
        {"CPU": 0.0, "memory": 64.0 * GIB},  # a head that runs nothing
        {"CPU": 2.0, "memory": 8.0 * GIB},
        {"CPU": 4.0, "memory": 12.0 * GIB},
    ]
    room = cluster_room(Reservation(1.0, 4 * GIB, "x"), nodes)
    assert (room.attempts, room.basis) == (
        5,
        "the cluster's room: 5 tasks of 1 core and 4.00 GiB on 2 nodes",
    )
    room = cluster_room(Reservation(2.0, 8 * GIB, "x"), nodes)
    assert (room.attempts, room.basis) == (
        4,
        "the cluster's room: 2 tasks of 2 cores and 8.00 GiB on 2 nodes, 2 commands at once each",
    )
    assert cluster_room(Reservation(0.5, 0, "x"), nodes).attempts == 12
    assert cluster_room(Reservation(1.0, 16 * GIB, "x"), nodes).attempts == 1, "at least one"


def run_on(
    cluster: Any, out: Path, tasks: list[str], *options: str, workers: str | None = "4"
) -> subprocess.Popen[str]:
    """`sprout run` of the example `tasks` on `cluster`, pass@1 with the trap model, with
    `--workers workers` (None: none given)."""
    args = [
        "run", *(str(EXAMPLE_TASKS / name) for name in tasks),
        "--model", "oracle-noise:errors=trap", "--method", "pass@1", "--quiet",
        *(["--workers", workers] if workers else []),
        "--out", str(out),
        "--ray", cluster.address, "--ray-store", f"{out}.stores/{{node}}", *options,
    ]  # fmt: skip
    return subprocess.Popen(
        [str(SPROUT), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def schedules(out: Path) -> dict[str, dict[str, Any]]:
    """Per task: its (only) schedule's row, with when it finished."""
    run = RunFolder.open(out)
    try:
        times = run.tree.schedule_finish_times()
        return {
            row["task_id"]: {**row, "finished": times[row["task_id"], row["method"]]}
            for row in run.tree.schedules()
        }
    finally:
        run.close()


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_node_with_two_cores_and_memory_for_one_task_holds_one_at_a_time(
    tmp_path: Path,
) -> None:
    with cluster_of([{"num_cpus": 2, "memory": SANDBOX_MEMORY * 3 // 2}]) as cluster:
        out = tmp_path / "run"
        code, output = finished(run_on(cluster, out, ["blog-slugs", "invoice-rounding"]))
        assert code in (0, 1), output[-3000:]  # 1: a task not resolved, as the trap has it

    done = schedules(out)
    assert all(row["status"] == "done" for row in done.values()), done
    first, second = sorted(placements(out), key=lambda placed: placed["since"])
    assert [first["memory"], second["memory"]] == [SANDBOX_MEMORY] * 2
    assert [first["cpus"], second["cpus"]] == [1.0, 1.0]
    assert second["since"] >= done[first["task"]]["finished"], (
        "the second task waited for the first to end: two cores, memory for one"
    )


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_reservation_no_node_has_ends_its_pairs_in_error_and_0_reserves_none(
    tmp_path: Path,
) -> None:
    """A worker with one core and 1 GiB: the default reservation (4 GiB) and two cores are
    more than any node has, so the task's pair ends in error, naming the option to change,
    without waiting; `--ray-memory 0` runs it there."""
    with cluster_of([{"num_cpus": 1, "memory": GIB}]) as cluster:
        too_big = run_on(cluster, tmp_path / "memory", ["blog-slugs"])
        too_many = run_on(cluster, tmp_path / "cores", ["blog-slugs"], "--ray-cpus", "2")
        for refused in (too_big, too_many):
            code, output = finished(refused, REFUSED_TIMEOUT_S)
            assert code == 1, output[-3000:]
        none = run_on(cluster, tmp_path / "none", ["blog-slugs"], "--ray-memory", "0")
        code, output = finished(none)
        assert code in (0, 1), output[-3000:]

    (error,) = [row["error"] for row in schedules(tmp_path / "memory").values()]
    assert error == (
        "blog-slugs: no node of the cluster can hold it: it needs 4.00 GiB of memory (its "
        "sandbox's memory limit, 4.00 GiB, times 1 commands at once) on a node with 1 cores, "
        "and the largest such node has 1.00 GiB: set a smaller --ray-memory (0 reserves none)"
    )
    assert placements(tmp_path / "memory") == []
    (error,) = [row["error"] for row in schedules(tmp_path / "cores").values()]
    assert "needs 2 cores (--ray-cpus), and the largest node has 1" in error, error

    assert [row["status"] for row in schedules(tmp_path / "none").values()] == ["done"]
    (placed,) = placements(tmp_path / "none")
    assert (placed["cpus"], placed["memory"]) == (1.0, 0)


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_run_without_workers_fills_the_cluster_on_every_node(tmp_path: Path) -> None:
    """A head and two workers of one core and memory for two tasks each: room for three
    tasks at once, one per node, and the run keeps three alive, never more."""
    out = tmp_path / "run"
    tasks = ["blog-slugs", "invoice-rounding", "recipe-metric", "stock-low-report"]
    with cluster_of(TWO_WORKERS, head=ONE_CORE) as cluster:
        nodes = {node.node_id for node in cluster.list_all_nodes()}
        code, output = finished(run_on(cluster, out, tasks, workers=None))
        assert code in (0, 1), output[-3000:]  # 1: a task not resolved, as the trap has it

    assert all(row["status"] == "done" for row in schedules(out).values())
    at_once = json.loads((out / "results.json").read_text())["concurrency"]
    assert at_once["workers"] == 3
    assert at_once["basis"] == "the cluster's room: 3 tasks of 1 core and 4.00 GiB on 3 nodes"
    assert 1 < at_once["peak"] <= 3, at_once
    assert attempt_nodes(out) == nodes, "attempts ran on every node"


def attempt_nodes(out: Path) -> set[str]:
    """The nodes whose stores sealed some attempt's turns, as the run's placements name them."""
    stores = {placed["store"]: placed["node"] for placed in placements(out)}
    run = RunFolder.open(out)
    try:
        return {
            node
            for attempt in run.tree.attempts()
            for turn in run.tree.own_turns(attempt)
            for store, node in stores.items()
            if sealed_in(store, turn.checkpoint)
        }
    finally:
        run.close()
