"""`ship_cost`, the layer-shipping measurement a benchmark calls: it ships what it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.sandbox import LayerStore
from tests.support.requirements import require_host_image

ray = pytest.importorskip("ray", reason="sprout.cluster needs Ray: pip install 'sprout-rl[dist]'")
from sprout.cluster import join, leave  # noqa: E402  after the skip: it needs Ray
from sprout.cluster.ship_cost import ship_cost  # noqa: E402


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_ship_cost_times_a_real_shipment(tmp_path: Path):
    require_host_image()
    join("local")
    try:
        cost = ship_cost(str(tmp_path / "ship"), megabytes=4, layers=2)
    finally:
        leave()
    assert (cost.megabytes, cost.layers) == (4.0, 2) and cost.seconds_per_mb > 0
    source, target = (LayerStore(tmp_path / "ship" / name) for name in ("source", "target"))
    top = max(source.sealed_ids(), key=lambda layer_id: source.layer(layer_id).depth)
    for name in ("/workspace/part0", "/workspace/part1"):
        part = target.read(top, name)
        assert part is not None and len(part) == 2_000_000 and part == source.read(top, name)


def test_ship_cost_needs_a_cluster(tmp_path: Path):
    with pytest.raises(RuntimeError, match="join a Ray cluster"):
        ship_cost(str(tmp_path / "ship"))
