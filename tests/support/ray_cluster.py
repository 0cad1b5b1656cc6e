"""Ray clusters on this machine for the tests of `sprout.cluster`: a head (with no cores,
unless a test gives it some) and worker nodes of given resources (`ray.cluster_utils.Cluster`),
shut down after, with a check that none of their processes outlived them."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from tests.support.requirements import require_host_image

GIB = 1 << 30
WORKER_MEMORY = 8 * GIB
"""Ray's `memory` resource of each worker of `TWO_WORKERS`, set rather than the machine's
(what Ray gives a node by default), so that a task's default reservation (its sandbox's
4 GiB memory limit) fits on every worker on any machine, one of 4 GB too."""
ONE_CORE = {"num_cpus": 1, "memory": WORKER_MEMORY}
TWO_WORKERS = [ONE_CORE] * 2
"""A head with no cores (nothing runs there) and two workers with one core each."""
IDLE_HEAD = {"num_cpus": 0}
PROMPT_DEATH = {
    "health_check_initial_delay_ms": 1_000,
    "health_check_period_ms": 1_000,
    "health_check_timeout_ms": 3_000,
    "health_check_failure_threshold": 3,
}
"""The GCS's health checks of a cluster whose test kills a node: it marks the node dead
about 3 s after, where Ray's defaults (five missed checks 3 s apart) take about 16 s on
this machine, all of which a run waits out before its tasks there are placed again. Only
on those clusters: a shared one, busy beside the other worker's tests, is not to lose a
slow node."""


@contextmanager
def cluster_of(
    workers: Sequence[Mapping[str, Any]], head: Mapping[str, Any] = IDLE_HEAD
) -> Iterator[Any]:
    """A head of resources `head` (by default no cores) and one worker node per entry of `workers`
    (its resources, as `Cluster.add_node` takes them), shut down after the block."""
    cluster_utils = pytest.importorskip(
        "ray.cluster_utils", reason="--ray needs Ray: pip install 'sprout-rl[dist]'"
    )
    require_host_image()
    made = cluster_utils.Cluster(initialize_head=True, head_node_args=dict(head))
    session = made.head_node.get_session_dir_path()
    try:
        for worker in workers:
            made.add_node(**worker)
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
