"""`TaskHost`, the body of a task's Ray actor, without Ray: forks by id, a moved task's
checkpoints adopted from the store of the node it left, when that store can be read, and
a checkpoint recorded by the driver once the node that sealed it has it on disk."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from sprout.durable import syncfs
from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.layers import flusher
from sprout.workspace import WorkspaceError
from tests.support.requirements import require_host_image

pytest.importorskip("ray", reason="sprout.cluster needs Ray: pip install 'sprout-rl[dist]'")
# after the skip: they need Ray
from sprout.cluster.host import TaskHost
from sprout.cluster.remote_workspace import RemoteWorkspace
from sprout.cluster.sandboxes import RaySandboxes


def sealed_elsewhere(path: Path) -> str:
    """A checkpoint holding /workspace/note, sealed in a store of its own at `path`."""
    with Sandbox.create(LayerStore(path)) as sandbox:
        sandbox.run("echo before > /workspace/note")
        return sandbox.checkpoint()


@pytest.mark.sandbox
def test_a_moved_task_continues_from_the_dead_nodes_store(tmp_path: Path):
    require_host_image()
    checkpoint = sealed_elsewhere(tmp_path / "dead")
    host = TaskHost("n2", str(tmp_path / "alive"), [("n1", str(tmp_path / "dead"))], slots=1)
    try:
        fork = host.fork(checkpoint)
        assert host.run(fork, "cat /workspace/note", 10).output == "before\n"
        host.run(fork, "echo after >> /workspace/note", 10)
        sealed = host.seal(fork)
        host.close(fork)
        assert [c.path for c in sealed.changes or ()] == ["/workspace/note"]
        assert LayerStore(tmp_path / "alive").read(sealed.checkpoint, "/workspace/note") == (
            b"before\nafter\n"
        )
    finally:
        host.shutdown()


@pytest.mark.sandbox
def test_a_checkpoint_no_readable_store_holds_is_the_places_fault(tmp_path: Path):
    require_host_image()
    checkpoint = sealed_elsewhere(tmp_path / "elsewhere")
    host = TaskHost("n2", str(tmp_path / "alive"), [("n1", str(tmp_path / "gone"))], slots=1)
    try:
        with pytest.raises(WorkspaceError, match=f"checkpoint {checkpoint}: in none of"):
            host.fork(checkpoint)
        assert not (tmp_path / "gone").exists(), "an unreadable store is never made"
        with pytest.raises(WorkspaceError, match="not open on node n2"):
            host.run("no-such-fork", "true", 10)
    finally:
        host.shutdown()


class HostHere:
    """A `Place` whose actor is a `TaskHost` in this process (`lost`: its node died)."""

    def __init__(self, host: TaskHost) -> None:
        self.host = host
        self.lost = False
        self.calls: list[str] = []

    def call(self, method: str, *args: Any) -> Any:
        self.calls.append(method)
        if self.lost:
            raise WorkspaceError(f"node {self.host.node} died")
        return getattr(self.host, method)(*args)


@pytest.mark.sandbox
def test_the_driver_settles_a_checkpoint_on_the_node_whose_fork_sealed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    require_host_image()
    release = threading.Event()

    def held(fd: int) -> bool:
        assert release.wait(60), "the test never let the flush go"
        return syncfs(fd)

    monkeypatch.setattr(flusher, "syncfs", held)
    sandboxes = RaySandboxes(str(tmp_path / "{node}"), 1, lambda placements: None)
    host = TaskHost("n1", str(tmp_path / "n1"), [], slots=1)
    place = HostHere(host)
    try:
        with Sandbox.create(host.store) as sandbox:
            checkpoint_0 = sandbox.checkpoint(always=True)
        release.set()
        assert host.store.wait_durable(checkpoint_0, timeout=60)
        release.clear()
        with RemoteWorkspace(lambda: place, sandboxes._note_sealed).fork(checkpoint_0) as fork:
            fork.run("echo turn > /workspace/note", 10)
            sealed = fork.seal().checkpoint  # returns while the node's flush is held
        settling = threading.Thread(target=sandboxes.settle, args=(sealed,))
        settling.start()
        settling.join(0.2)
        assert settling.is_alive(), "settled before the node had it on disk"
        release.set()
        settling.join(60)
        assert not settling.is_alive() and place.calls[-1] == "wait_durable"

        sandboxes.settle(checkpoint_0)  # no fork of the run sealed it: nothing to ask
        assert place.calls[-1] == "wait_durable" and place.calls.count("wait_durable") == 1
        with RemoteWorkspace(lambda: place, sandboxes._note_sealed).fork(sealed) as fork:
            fork.run("echo again >> /workspace/note", 10)
            lost = fork.seal().checkpoint
        place.lost = True  # the node died before the driver recorded the turn
        with pytest.raises(WorkspaceError, match="node n1 died"):
            sandboxes.settle(lost)
    finally:
        release.set()
        host.shutdown()
