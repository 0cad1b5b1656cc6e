"""`sprout run --ray` on a real Ray cluster: a head and two worker nodes on this machine
(`ray.cluster_utils.Cluster`), each worker with one core and its own layer store.

Each test starts its cluster and shuts it down; the run is a `sprout` process of its own,
as a user would start it, joining the cluster by its address.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sprout.cli import main
from sprout.runfolder import RunFolder, RunFolderError
from sprout.sandbox import LayerStore
from sprout.tree import StoreError
from tests.conftest import require_host_image

cluster_utils = pytest.importorskip(
    "ray.cluster_utils", reason="--ray needs Ray: pip install 'sprout-rl[dist]'"
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
TASKS = [str(EXAMPLES / "blog-slugs"), str(EXAMPLES / "invoice-rounding")]
SPROUT = Path(sys.executable).parent / "sprout"
RUN_TIMEOUT_S = 400


def run_args(out: Path) -> list[str]:
    """`make demo`'s model on two example tasks, small: what every run here plays."""
    return [
        "run", *TASKS, "--model", "oracle-noise:errors=trap", "--method", "pass@2,sprout",
        "--rounds", "1", "--workers", "4", "--quiet", "--out", str(out),
    ]  # fmt: skip


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Any]:
    """A head with no cores (nothing runs there) and two workers with one core each."""
    require_host_image()
    made = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        for _ in range(2):
            made.add_node(num_cpus=1)
        made.wait_for_nodes()
        yield made
    finally:
        made.shutdown()


def start_on(cluster: Any, out: Path, stores: Path) -> subprocess.Popen[bytes]:
    args = [*run_args(out), "--ray", cluster.address, "--ray-store", f"{stores}/{{node}}"]
    return subprocess.Popen([str(SPROUT), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def finish(process: subprocess.Popen[bytes]) -> str:
    try:
        output, _ = process.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"the run outlived {RUN_TIMEOUT_S} s:\n{output.decode()[-3000:]}")
    assert process.returncode == 0, output.decode()[-3000:]
    return output.decode()


def shape(out: Path) -> dict[tuple[str, str], list[tuple[str, str, float | None]]]:
    """Per (task, method): each attempt's kind, status and reward, oldest first."""
    run = RunFolder.open(out)
    try:
        found: dict[tuple[str, str], list[tuple[str, str, float | None]]] = {}
        for attempt in run.tree.attempts():
            key = (attempt.task_id, attempt.method)
            found.setdefault(key, []).append((attempt.kind, attempt.status, attempt.reward))
        return found
    finally:
        run.close()


def placements(out: Path) -> list[dict[str, Any]]:
    run = RunFolder.open(out)
    try:
        meta = run.tree.get_meta("ray")
    finally:
        run.close()
    return [] if meta is None else list(meta["placements"])


def sealed_in(store: str, checkpoint: str) -> bool:
    """Whether `checkpoint` was sealed in `store` (not adopted there from another one)."""
    diff = LayerStore(store).diff_dir(checkpoint)
    return os.path.isdir(diff) and not os.path.islink(diff)


def turns_by_store(out: Path, stores: list[str]) -> dict[int, list[str]]:
    """Per attempt: the store each of its own turns' checkpoints was sealed in."""
    run = RunFolder.open(out)
    try:
        found: dict[int, list[str]] = {}
        for attempt in run.tree.attempts():
            for turn in run.tree.own_turns(attempt):
                where = [s for s in stores if sealed_in(s, turn.checkpoint)]
                assert len(where) <= 1, f"attempt {attempt.id}: {turn.checkpoint} sealed twice"
                found.setdefault(attempt.id, []).extend(where or ["(unchanged)"])
        return found
    finally:
        run.close()


def test_ray_store_needs_a_node_in_its_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    args = [*run_args(tmp_path / "run"), "--ray", "local", "--ray-store", str(tmp_path / "s")]
    assert main(args) == 2
    assert "--ray-store" in capsys.readouterr().err
    assert not (tmp_path / "run").exists(), "refused before the run folder was touched"


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tasks_run_on_the_cluster_as_they_run_here(cluster: Any, tmp_path: Path):
    here, there = tmp_path / "here", tmp_path / "there"
    assert main(run_args(here)) == 0
    finish(start_on(cluster, there, tmp_path / "stores"))

    assert shape(there) == shape(here), "the same attempts and verdicts as a local run"
    placed = placements(there)
    assert sorted(p["task"] for p in placed) == ["blog-slugs", "invoice-rounding"]
    assert all(p["why"] == "placed" for p in placed), "placed once each: no node died"
    workers = {node.node_id for node in cluster.worker_nodes}
    assert {p["node"] for p in placed} == workers, "one core each: a task per worker node"
    stores = [p["store"] for p in placed]
    assert len(set(stores)) == 2, "each node its own store"
    store_of = {p["task"]: p["store"] for p in placed}
    run = RunFolder.open(there)
    try:
        task_of = {a.id: a.task_id for a in run.tree.attempts()}
    finally:
        run.close()
    for attempt_id, where in turns_by_store(there, stores).items():
        assert set(where) <= {store_of[task_of[attempt_id]], "(unchanged)"}, attempt_id
    assert not (there / "layers" / "l").exists() or not os.listdir(there / "layers" / "l"), (
        "no sandbox ran in the driver's run folder"
    )


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_node_that_dies_mid_run_loses_no_finished_turn(cluster: Any, tmp_path: Path):
    out = tmp_path / "run"
    process = start_on(cluster, out, tmp_path / "stores")
    try:
        victim, before = wait_for_a_turn_in_flight(out, process)
        dead = next(n for n in cluster.worker_nodes if n.node_id == victim["node"])
        cluster.remove_node(dead, allow_graceful=False)
        finish(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    run = RunFolder.open(out)
    try:
        schedules = run.tree.schedules()
        after = {
            (t.attempt_id, t.index): t for a in run.tree.attempts() for t in run.tree.own_turns(a)
        }
        reasons = [a.end_reason or "" for a in run.tree.attempts()]
        task_of = {a.id: a.task_id for a in run.tree.attempts()}
    finally:
        run.close()
    assert len(schedules) == 4 and all(s["status"] == "done" for s in schedules), schedules
    for key, turn in before.items():
        assert after[key].checkpoint == turn.checkpoint and after[key].text == turn.text, key
    assert not any("died" in reason for reason in reasons), "continued, never left as an error"
    moved = [p for p in placements(out) if p["task"] == victim["task"]]
    assert [p["why"] for p in moved] == ["placed", f"node {victim['node']} died"]
    assert moved[1]["node"] != victim["node"]
    old, new = moved[0]["store"], moved[1]["store"]
    sealed = {
        attempt_id: [w for w in where if w != "(unchanged)"]
        for attempt_id, where in turns_by_store(out, [old, new]).items()
        if task_of[attempt_id] == victim["task"]
    }
    for attempt_id, where in sealed.items():
        assert where == sorted(where, key=[old, new].index), f"attempt {attempt_id} went back"
    assert any(new in where for where in sealed.values()), "continued on the new node"


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_killed_driver_resumes_on_the_cluster(cluster: Any, tmp_path: Path):
    """The driver dying is `--resume`, as on one machine: its tasks' actors die with it,
    and the resumed run finds each task's checkpoints in the stores the log names."""
    out, stores = tmp_path / "run", tmp_path / "stores"
    process = start_on(cluster, out, stores)
    try:
        _, before = wait_for_a_turn_in_flight(out, process)
        process.kill()
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    args = [
        *run_args(out),
        "--resume",
        "--ray",
        cluster.address,
        "--ray-store",
        f"{stores}/{{node}}",
    ]
    resumed = subprocess.Popen(
        [str(SPROUT), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    finish(resumed)

    run = RunFolder.open(out)
    try:
        schedules = run.tree.schedules()
        after = {
            (t.attempt_id, t.index): t for a in run.tree.attempts() for t in run.tree.own_turns(a)
        }
    finally:
        run.close()
    assert len(schedules) == 4 and all(s["status"] == "done" for s in schedules), schedules
    for key, turn in before.items():
        assert after[key].checkpoint == turn.checkpoint and after[key].text == turn.text, key


def wait_for_a_turn_in_flight(
    out: Path, process: subprocess.Popen[bytes]
) -> tuple[dict[str, Any], dict[tuple[int, int], Any]]:
    """The placement of a task with an attempt that has committed a turn and is still
    running, and every turn committed at that instant."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "the run ended before any turn was in flight"
        try:
            found = in_flight(out)
        except (RunFolderError, StoreError):  # the run is still making its folder
            found = None
        if found is not None:
            return found
        time.sleep(0.05)
    pytest.fail("no attempt committed a turn within 120 s")


def in_flight(out: Path) -> tuple[dict[str, Any], dict[tuple[int, int], Any]] | None:
    placed = placements(out)
    run = RunFolder.open(out)
    try:
        attempts = run.tree.attempts()
        turns = {(t.attempt_id, t.index): t for a in attempts for t in run.tree.own_turns(a)}
        busy = {a.task_id for a in attempts if a.status == "running" and run.tree.own_turns(a)}
    finally:
        run.close()
    return next(((p, turns) for p in placed if p["task"] in busy), None)


def test_a_cluster_that_cannot_be_joined_is_one_line_and_no_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    out = tmp_path / "run"
    assert main([*run_args(out), "--ray", "no-port-here"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("sprout run: --ray no-port-here: cannot join the cluster: ")
    assert not out.exists()
