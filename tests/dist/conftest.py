"""The Ray cluster the tests of `sprout.dist` run on: a head and two worker nodes on this
machine (`ray.cluster_utils.Cluster`), each test's own, shut down after it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import require_host_image


@pytest.fixture
def cluster() -> Iterator[Any]:
    """A head with no cores (nothing runs there) and two workers with one core each."""
    cluster_utils = pytest.importorskip(
        "ray.cluster_utils", reason="--ray needs Ray: pip install 'sprout-rl[dist]'"
    )
    require_host_image()
    made = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    session = made.head_node.get_session_dir_path()
    try:
        for _ in range(2):
            made.add_node(num_cpus=1)
        made.wait_for_nodes()
        yield made
    finally:
        made.shutdown()
    assert ray_processes_of(session) == [], "the cluster's processes outlived it"


def ray_processes_of(session: str) -> list[str]:
    """The raylet and GCS processes of the Ray session at `session` still running (other
    clusters on this machine, a benchmark's say, are not this test's)."""
    listed = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [
        line[:120]
        for line in listed.splitlines()
        if session in line and ("raylet" in line or "gcs_server" in line)
    ]
