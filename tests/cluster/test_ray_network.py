"""The sandboxes of a task's Ray actor refuse what the driver's refuse: a worker process is
started by its node's raylet, not by the driver, so it inherits none of the driver's
environment; each actor is handed the addresses (and every node's) when it starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sprout.sandbox.network.namespace import REFUSE_ENV, refused_by_run

ray = pytest.importorskip("ray", reason="sprout.cluster needs Ray: pip install 'sprout-rl[dist]'")
from sprout.cluster import sandboxes  # noqa: E402

MODEL_SERVER = "198.51.100.99"
"""A documentation address: the driver's model server on another machine, say."""


def _refused_in(actor: Any) -> list[str]:
    """What the actor's sandboxes' firewalls refuse beyond their node's own addresses."""
    return refused_by_run()


@pytest.mark.timeout(300)
def test_a_tasks_actor_refuses_the_drivers_model_server_and_every_node(
    shared_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REFUSE_ENV, MODEL_SERVER)  # after the cluster started: as a driver's
    ray.init(address=shared_cluster.address, log_to_driver=False)
    try:
        nodes = [n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]]
        actor = sandboxes._HostActor.options(num_cpus=1).remote(
            str(tmp_path / "{node}"), (), 1, False, None, sandboxes.refused_addresses()
        )
        seen = ray.get(actor.__ray_call__.remote(_refused_in))
        ray.kill(actor)
    finally:
        ray.shutdown()
    assert f"{MODEL_SERVER}/32" in seen, "the actor's sandboxes would reach the model server"
    assert nodes and all(f"{node}/32" in seen for node in nodes), (nodes, seen)
