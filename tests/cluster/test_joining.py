"""Joining a cluster and leaving it: `--ray local` is a cluster of its own on this machine,
whatever other cluster runs here."""

from __future__ import annotations

from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="sprout.cluster needs Ray: pip install 'sprout-rl[dist]'")
from sprout.cluster import join, leave  # noqa: E402  after the skip: it needs Ray


@ray.remote(num_cpus=0)
class _Where:
    def node(self) -> str:
        return str(ray.get_runtime_context().get_node_id())


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_local_starts_a_cluster_of_its_own_beside_one_already_here(shared_cluster: Any) -> None:
    """`shared_cluster` wrote its address where Ray's default `ray.init()` looks first; a
    `--ray local` run that joined it would place its tasks on someone else's nodes."""
    theirs = {node.node_id for node in shared_cluster.list_all_nodes()}
    join("local")
    try:
        ours = {str(node["NodeID"]) for node in ray.nodes()}
        ran_on = ray.get(_Where.remote().node.remote(), timeout=60)
    finally:
        leave()
    assert not ray.is_initialized()
    assert ours and not ours & theirs, "joined the cluster already running here"
    assert ran_on in ours
