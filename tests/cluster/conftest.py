"""The Ray cluster the tests of `sprout.cluster` run on: a head and two worker nodes on this
machine (tests/support/ray_cluster.py), each test's own, shut down after it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.ray_cluster import TWO_WORKERS, cluster_of


@pytest.fixture
def cluster() -> Iterator[Any]:
    """A cluster of TWO_WORKERS that this test alone uses, and may take nodes from."""
    with cluster_of(TWO_WORKERS) as made:
        yield made
