"""What shipping layers costs per MB: a chain of layers of random bytes, sealed in a
store on this node, shipped by `sprout.cluster.ship.fetch` (packed by a task pinned to the
node, through Ray's object store, unpacked into a second store) and timed."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import ray

from sprout.cluster.ship import fetch
from sprout.sandbox import LayerStore, Sandbox


@dataclass(frozen=True)
class ShipCost:
    """One timed shipment of `layers` layers holding `megabytes` MB in all."""

    megabytes: float
    layers: int
    seconds: float

    @property
    def seconds_per_mb(self) -> float:
        return self.seconds / self.megabytes


def ship_cost(work: str, megabytes: int = 100, layers: int = 10) -> ShipCost:
    """Seal `layers` turns writing `megabytes` MB of random bytes in all in a store under
    `work` (a new folder), then time shipping the chain to a second store there. Needs a
    joined cluster (`sprout.cluster.join`); the layers are packed on the driver's node."""
    if not ray.is_initialized():
        raise RuntimeError("ship_cost: join a Ray cluster first (sprout.cluster.join)")
    if megabytes < 1 or layers < 1:
        raise ValueError(f"ship_cost: megabytes and layers must be >= 1, got {megabytes}, {layers}")
    os.makedirs(work)
    source, target = os.path.join(work, "source"), os.path.join(work, "target")
    each = megabytes * 1_000_000 // layers
    with Sandbox.create(LayerStore(source)) as sandbox:
        for turn in range(layers):
            sandbox.run(f"head -c {each} /dev/urandom > /workspace/part{turn}")
            checkpoint = sandbox.checkpoint()
    receiving = LayerStore(target)
    node = ray.get_runtime_context().get_node_id()
    started = time.perf_counter()
    if not fetch(node, source, receiving, checkpoint):
        raise RuntimeError(f"ship_cost: {checkpoint} could not be shipped from {source}")
    seconds = time.perf_counter() - started
    return ShipCost(each * layers / 1e6, layers, seconds)
