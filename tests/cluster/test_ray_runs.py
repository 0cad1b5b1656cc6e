"""`sprout run --ray` on a real Ray cluster: a head and two worker nodes on this machine
(`ray.cluster_utils.Cluster`), each worker with one core and its own layer store.

The tests that leave the nodes alone share one cluster; the one that kills a node has its
own. Each run is a `sprout` process of its own, as a user would start it, joining the
cluster by its address.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from sprout.cli import main
from sprout.commands.shell import checkpoint_store
from sprout.runfolder import RunFolder, RunFolderError
from sprout.sandbox import LayerStore, Sandbox
from sprout.tree import RunDatabaseError
from sprout.viewer.turns import turn_detail
from tests.support.ray_runs import TASKS, finished, placements, sealed_in, shape
from tests.support.repo_paths import SPROUT

pytest.importorskip("ray.cluster_utils", reason="--ray needs Ray: pip install 'sprout-rl[dist]'")


def run_args(out: Path) -> list[str]:
    """`make demo`'s model on two example tasks, small: what every run here plays."""
    return [
        "run", *TASKS, "--model", "oracle-noise:errors=trap", "--method", "pass@2,sprout",
        "--rounds", "1", "--workers", "4", "--quiet", "--out", str(out),
    ]  # fmt: skip


def start_on(cluster: Any, out: Path, stores: Path) -> subprocess.Popen[bytes]:
    args = [*run_args(out), "--ray", cluster.address, "--ray-store", f"{stores}/{{node}}"]
    return subprocess.Popen([str(SPROUT), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def finish(process: subprocess.Popen[bytes]) -> str:
    """The output of a run that ended well within RUN_TIMEOUT_S."""
    code, output = finished(process)
    assert code == 0, output[-3000:]
    return output


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
def test_tasks_run_on_the_cluster_as_they_run_here(
    shared_cluster: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    here, there = tmp_path / "here", tmp_path / "there"
    assert main(run_args(here)) == 0
    finish(start_on(shared_cluster, there, tmp_path / "stores"))

    assert shape(there) == shape(here), "the same attempts and verdicts as a local run"
    placed = placements(there)
    assert sorted(p["task"] for p in placed) == ["blog-slugs", "invoice-rounding"]
    assert all(p["why"] == "placed" for p in placed), "placed once each: no node died"
    workers = {node.node_id for node in shared_cluster.worker_nodes}
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
    assert diffs_of(there) == diffs_of(here), "the viewer reads a node's store as layers/"
    assert exported(there, tmp_path / "there.jsonl") == exported(here, tmp_path / "here.jsonl")

    listing = "find . -type f | sort | xargs -r sha256sum\n"
    assert shelled_all(there, listing) == shelled_all(here, listing), "the same checkpoints"

    hidden = Path(stores[0] + ".elsewhere")  # as on a node this machine cannot read
    os.rename(stores[0], hidden)
    try:
        task = next(t for t, store in store_of.items() if store == stores[0])
        detail = first_changed_turn(there, task)
        assert detail["files"] and all(f["diff"] is None for f in detail["files"])
        assert "cannot read" in detail["files_error"], detail["files_error"]
        attempt = next(a for a in task_of if task_of[a] == task)
        capsys.readouterr()
        assert main(["shell", str(there), f"{attempt}:1"]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert stores[0] in line and "node " in line and "cannot read" in line, line
        assert "give --ray ADDRESS to ship it here" in line
    finally:
        os.rename(hidden, stores[0])

    # this machine told it cannot read the store (the node still can): shipped here
    monkeypatch.setattr("sprout.runfolder.readable_store", lambda path: path != stores[0])
    run = RunFolder.open(there)
    try:
        checkpoint = run.tree.checkpoint(run.tree.attempt(attempt), 1)
        layers = checkpoint_store(run, task, checkpoint, shared_cluster.address)
        assert layers.path == run.layers.path, "shipped into the run folder's own store"
        with Sandbox.fork(layers, checkpoint) as shipped:
            seen = shipped.run(listing).output
    finally:
        run.close()
    with Sandbox.fork(LayerStore(stores[0]), checkpoint) as original:
        assert seen == original.run(listing).output


def shelled_all(out: Path, commands: str) -> list[str]:
    """What `sprout shell OUT A:1` prints for `commands` on its standard input, for every
    attempt A of blog-slugs (sorted: attempts of a run on the cluster interleave)."""
    run = RunFolder.open(out)
    try:
        refs = [f"{a.id}:1" for a in run.tree.attempts() if a.task_id == "blog-slugs"]
    finally:
        run.close()
    found = []
    for ref in refs:
        done = subprocess.run(
            [str(SPROUT), "shell", str(out), ref], input=commands, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        found.append(done.stdout)
    return sorted(found)


def diffs_of(out: Path) -> dict[str, list[str]]:
    """Per task: the viewer's files and diffs of each turn (sorted: attempts of a run on
    the cluster interleave, so their ids differ from a local run's)."""
    run = RunFolder.open(out)
    try:
        found: dict[str, list[str]] = {}
        for attempt in run.tree.attempts():
            for turn in run.tree.own_turns(attempt):
                detail = turn_detail(run, attempt.id, turn.index)
                assert detail["files_error"] is None, detail["files_error"]
                files = [(f["path"], f["diff"]) for f in detail["files"]]
                found.setdefault(attempt.task_id, []).append(repr(files))
        return {task: sorted(turns) for task, turns in found.items()}
    finally:
        run.close()


def first_changed_turn(out: Path, task: str) -> dict[str, Any]:
    """The viewer's detail of the first turn of `task` that changed a file."""
    run = RunFolder.open(out)
    try:
        for attempt in run.tree.attempts(task):
            for turn in run.tree.own_turns(attempt):
                if turn.changes:
                    return turn_detail(run, attempt.id, turn.index)
        raise AssertionError("no turn changed a file")
    finally:
        run.close()


def exported(out: Path, records: Path) -> tuple[int, str, str]:
    """`sprout export`'s exit code, messages and records: it reads only sprout.db, so a
    cluster run exports as the same run played here does (the oracle model keeps no token
    ids: both refuse, with the same line but for the attempt's id)."""
    done = subprocess.run(
        [str(SPROUT), "export", str(out), "--format", "jsonl", "--out", str(records)],
        capture_output=True,
        text=True,
    )
    messages = re.sub(r"\d+", "N", done.stderr)  # attempt ids: a cluster's interleave
    return done.returncode, messages, records.read_text() if records.exists() else ""


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
def test_a_killed_driver_resumes_on_the_cluster(shared_cluster: Any, tmp_path: Path):
    """The driver dying is `--resume`, as on one machine: its tasks' actors die with it,
    and the resumed run finds each task's checkpoints in the stores the log names."""
    out, stores = tmp_path / "run", tmp_path / "stores"
    process = start_on(shared_cluster, out, stores)
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
        shared_cluster.address,
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
        except (RunFolderError, RunDatabaseError):  # the run is still making its folder
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
