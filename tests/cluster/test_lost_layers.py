"""A node that dies with the only copy of a task's layers, on a real Ray cluster: the
task's root in flight continues on the other node, from its last turn's checkpoint rebuilt
there by running its recorded calls again; what had finished stays as it was.

The nodes are told not to read each other's stores (`links=False`, as nodes on separate
machines cannot), and the dead node can no longer ship its layers: so the checkpoint the
root would have continued from is in no store that any living node can reach.
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sprout.models.resolve import ModelSpec
from sprout.runfolder import RunFolder
from sprout.sandbox import LayerStore
from sprout.sandbox.replay import sealed_in
from sprout.search import Progress, RunSettings, parse_methods, run_tasks
from sprout.tasks import load_native
from tests.support.taskfolders import two_edits_task

ray = pytest.importorskip("ray", reason="sprout.cluster needs Ray: pip install 'sprout-rl[dist]'")
from sprout.cluster import RaySandboxes  # noqa: E402


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.checkpoints_elsewhere("RaySandboxes played alone: the run's meta names no store")
def test_a_root_whose_node_died_with_its_layers_continues_on_a_rebuilt_checkpoint(
    cluster: Any, tmp_path: Path
):
    task = load_native(two_edits_task(tmp_path / "tasks", slow_step=1.0))
    run = RunFolder.create_new(tmp_path / "run")
    settings = RunSettings(ModelSpec.parse("oracle-noise:p=0"), parse_methods("pass@2"), workers=1)
    log: list[list[dict[str, Any]]] = []
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        sandboxes = RaySandboxes(str(tmp_path / "stores" / "{node}"), 1, log.append, links=False)
        played = threading.Thread(
            target=run_tasks, args=([task], run, settings, Progress(io.StringIO()), None, sandboxes)
        )
        played.start()
        try:
            victim = _node_of_a_root_in_flight(run, log, played)
            cluster.remove_node(
                next(n for n in cluster.list_all_nodes() if n.node_id == victim),
                allow_graceful=False,
            )
        finally:
            played.join(timeout=400)
            sandboxes.close()
        assert not played.is_alive(), "the run outlived 400 s"
    finally:
        ray.shutdown()

    first, second = run.tree.attempts(task.id)
    assert first.reward == 1.0 and run.tree.own_turns(first), "finished before: kept as it was"
    assert second.reward == 1.0 and second.fault is None
    turns = run.tree.own_turns(second)
    assert [t.index for t in turns] == [1, 2, 3]
    (rebuilt,) = [entry.to_json() for entry in run.tree.meta().rebuilt]
    assert rebuilt["attempt"] == second.id and rebuilt["diverged"] is None
    # the path up to the checkpoint the node took with it: one turn or more, as the poll saw
    # the second root sealing its first turn before the node was removed
    [lost] = [t.index for t in turns if t.checkpoint == rebuilt["checkpoint"]]
    assert rebuilt["calls"] == sum(len(t.calls) for t in turns if t.index <= lost)
    moved = [(p["node"], p["why"], p["store"]) for p in log[-1]]
    assert moved[0][0] == victim and moved[1][1] == f"node {victim} died"
    assert moved[1][0] != victim
    new_store = LayerStore(moved[1][2])
    assert all(sealed_in(new_store)(t.checkpoint) for t in turns), "its turns, on the new node"
    assert [s["status"] for s in run.tree.schedules()] == ["done"]
    run.close()


def _node_of_a_root_in_flight(
    run: RunFolder, log: list[list[dict[str, Any]]], played: threading.Thread
) -> str:
    """The node of the task once its second root has sealed a turn and is still running."""
    deadline = time.monotonic() + 200
    while time.monotonic() < deadline:
        assert played.is_alive(), "the run ended before the second root was in flight"
        roots = run.tree.attempts()
        if len(roots) == 2 and roots[1].status == "running" and run.tree.own_turns(roots[1]):
            return str(log[-1][-1]["node"])
        time.sleep(0.05)
    pytest.fail("the second root sealed no turn within 200 s")
