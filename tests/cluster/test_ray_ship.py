"""Layers shipped between the nodes of a real Ray cluster: a task that moves to a node
that cannot read the old node's store (told so, as a node on another machine could not)
gets the layers it needs through Ray's object store from a task pinned to the old node."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from sprout.sandbox import LayerStore, Sandbox, keep_private, private_file
from sprout.workspace import WorkspaceError

ray = pytest.importorskip("ray", reason="sprout.cluster needs Ray: pip install 'sprout-rl[dist]'")
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: E402

from sprout.cluster.sandboxes import _HostActor  # noqa: E402
from tests.support.file_tree import files_of  # noqa: E402


def workers(cluster: Any) -> list[Any]:
    return [node for node in cluster.list_all_nodes() if node is not cluster.head_node]


def host_on(node: str, template: str, sources: list[tuple[str, str]]) -> Any:
    """A task's actor on `node` that reads no other node's store."""
    pinned = NodeAffinitySchedulingStrategy(node, soft=False)
    return _HostActor.options(num_cpus=1, scheduling_strategy=pinned).remote(
        template, tuple(sources), 1, False
    )


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_task_on_a_node_that_cannot_read_the_old_store_gets_its_layers_shipped(
    shared_cluster: Any, tmp_path: Path
):
    old, new = (node.node_id for node in workers(shared_cluster))
    template = str(tmp_path / "stores" / "{node}")
    old_store = template.format(node=old[:12])
    with Sandbox.create(LayerStore(old_store)) as sandbox:  # the old node's turns
        sandbox.run("head -c 200000 /dev/urandom > /workspace/blob && echo a > /workspace/a")
        sandbox.run("rm /workspace/a")
        checkpoint = sandbox.checkpoint()
    # what its verifier needs beside it (the git history cut from a checkpoint 0) goes too
    keep_private(LayerStore(old_store), checkpoint, "git-history.bundle", b"cut\n")
    ray.init(address=shared_cluster.address, log_to_driver=False)
    try:
        host = host_on(new, template, [(old, old_store)])
        fork = ray.get(host.fork.remote(checkpoint))
        seen = ray.get(host.run.remote(fork, "sha256sum /workspace/blob && ls /workspace", 30))
        new_node, new_store = ray.get(host.where.remote())
        ray.get(host.shutdown.remote())
    finally:
        ray.shutdown()
    assert new_node == new and new_store != old_store
    source, target = LayerStore(old_store), LayerStore(new_store)
    for layer_id in source.ancestry(checkpoint):
        assert not os.path.islink(target.diff_dir(layer_id)), "shipped, not linked"
        assert files_of(target, layer_id) == files_of(source, layer_id)
    shipped = private_file(target, checkpoint, "git-history.bundle")
    assert shipped is not None and Path(shipped).read_bytes() == b"cut\n"
    blob = source.read(checkpoint, "/workspace/blob")
    assert blob is not None
    assert seen.output == f"{hashlib.sha256(blob).hexdigest()}  /workspace/blob\nblob\n"


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_layers_on_a_dead_node_that_no_one_can_read_are_lost_in_one_line(
    cluster: Any, tmp_path: Path
):
    dying, living = workers(cluster)
    template = str(tmp_path / "stores" / "{node}")
    old_store = template.format(node=dying.node_id[:12])
    with Sandbox.create(LayerStore(old_store)) as sandbox:
        sandbox.run("echo a > /workspace/a")
        checkpoint = sandbox.checkpoint()
    cluster.remove_node(dying)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        host = host_on(living.node_id, template, [(dying.node_id, old_store)])
        with pytest.raises(WorkspaceError, match=f"checkpoint {checkpoint}: .*lost with its node"):
            ray.get(host.fork.remote(checkpoint))
    finally:
        ray.shutdown()
