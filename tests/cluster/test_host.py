"""`TaskHost`, the body of a task's Ray actor, without Ray: forks by id, and a moved task's
checkpoints adopted from the store of the node it left, when that store can be read."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.workspace import WorkspaceError
from tests.support.requirements import require_host_image

pytest.importorskip("ray", reason="sprout.cluster needs Ray: pip install 'sprout-rl[dist]'")
from sprout.cluster.host import TaskHost  # after the skip: it needs Ray


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
