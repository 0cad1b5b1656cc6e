"""What a task's actor reserves on a Ray cluster (cores and memory), and what `--ray-memory`
changes: a node holds no more tasks than it has memory for, a reservation no node has ends
the task's pairs in error in one line instead of waiting forever, and `--ray-memory 0`
reserves none. The cluster runs are `sprout run` processes on a real
`ray.cluster_utils.Cluster` whose worker nodes have the cores and memory each test names.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout.cluster.reservation import Reservation, check_fits, reservation
from sprout.commands.ray_options import ray_memory
from sprout.runfolder import RunFolder
from sprout.task import Task
from sprout.workspace import WorkspaceError
from tests.support.ray_cluster import GIB, cluster_of
from tests.support.ray_runs import finished, placements
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


def run_on(cluster: Any, out: Path, tasks: list[str], *options: str) -> subprocess.Popen[str]:
    """`sprout run` of the example `tasks` on `cluster`, pass@1 with the trap model."""
    args = [
        "run", *(str(EXAMPLE_TASKS / name) for name in tasks),
        "--model", "oracle-noise:errors=trap", "--method", "pass@1", "--workers", "4", "--quiet",
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
