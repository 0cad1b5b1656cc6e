"""The Ray clusters the tests of `sprout.cluster` run on: a head and two worker nodes on this
machine (tests/support/ray_cluster.py). The tests that leave the nodes alone share one per
test process (`shared_cluster`: one per pytest-xdist worker); a test that kills or removes
a node has its own (`cluster`), shut down after it.

Every driver and node of the suite runs with Ray's token authentication off (unless the
environment chose a mode). Ray turns it on for a process by itself, lastingly: when that
process starts a local instance (`--ray local`), and when it joins with no address while
`~/.ray/auth_token` exists. A driver with it on sees every actor it creates on a cluster
started with it off cancelled before it ran ("all references to the actor were removed"),
and a cluster made before the switch is such a cluster; so without a mode of its own, a
shared cluster would fail whichever test happened to follow such a join in its process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.ray_cluster import IDLE_HEAD, PROMPT_DEATH, TWO_WORKERS, cluster_of

AUTH_MODE = "RAY_AUTH_MODE"


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(AUTH_MODE, "disabled")


@pytest.fixture
def cluster() -> Iterator[Any]:
    """A cluster of TWO_WORKERS that this test alone uses, and may take nodes from: the
    nodes it kills are known dead within seconds (PROMPT_DEATH)."""
    with cluster_of(TWO_WORKERS, head={**IDLE_HEAD, "_system_config": PROMPT_DEATH}) as made:
        yield made


@pytest.fixture(scope="session")
def shared_cluster() -> Iterator[Any]:
    """A cluster of TWO_WORKERS for every test of this process that leaves its nodes as they
    are: each cluster costs 6-15 s to start on 2 cores, and with each test file on one
    worker (`--dist loadfile`) a cluster per module would serve one file's few tests. Each
    test's runs keep their stores in its own folder and end their jobs, whose actors Ray
    ends with them."""
    with cluster_of(TWO_WORKERS) as made:
        yield made
