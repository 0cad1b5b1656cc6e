"""One local Ray per test module of the verl integration, as verl's workers run in it; the
groups' rendezvous live there."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """Ray of this machine's own (address "local"), never another test's cluster it finds."""
    ray = pytest.importorskip("ray", reason="verl runs on Ray: pip install 'sprout-rl[dist]'")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()
