"""Shipping a checkpoint's layers between nodes that cannot read each other's stores.

A layer is a directory; the layers a checkpoint needs and the receiving store lacks are
packed, one tar stream each (GNU tar, keeping owners, modes, times, device whiteouts and
the overlay xattrs that mark opaque directories), by a Ray task pinned to the node that
holds them, and come back through Ray's object store to be unpacked on the receiving node.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Collection

import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from sprout.errors import SproutError
from sprout.sandbox import Layer, LayerStore, SandboxError, needed_layers, take_shipped_layer

TAR = ("tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--acls")
"""Every attribute a layer's files carry that overlayfs or the sandbox reads."""

Shipment = list[tuple[Layer, bytes]]
"""The layers one checkpoint needs, bottom first, each with its files as a tar stream."""


class ShipError(SproutError, RuntimeError):
    """Layers that could not be packed or unpacked: the tar command's own line."""


def pack(store: LayerStore, checkpoint: str, present: Collection[str]) -> Shipment:
    """The layers of `checkpoint` in `store` that are not in `present`, packed."""
    packed: Shipment = []
    for layer_id in needed_layers(store, checkpoint):
        if layer_id in present:
            continue
        files = os.path.realpath(store.diff_dir(layer_id))  # l/ID may link to a subvolume
        done = subprocess.run([*TAR, "-C", files, "-cf", "-", "."], capture_output=True)
        if done.returncode != 0:
            raise ShipError(f"layer {layer_id}: tar: {_first_line(done.stderr)}")
        packed.append((store.layer(layer_id), done.stdout))
    return packed


def unpack(store: LayerStore, shipment: Shipment) -> None:
    """Make the shipped layers `store`'s (each after its parent; ones it has are skipped)."""
    for layer, stream in shipment:
        try:
            store.layer(layer.id)
            continue
        except SandboxError:
            pass
        files = tempfile.mkdtemp(prefix=f".ship-{layer.id}-", dir=os.path.join(store.path, "w"))
        try:
            done = subprocess.run(
                [*TAR, "-C", files, "-xpf", "-"], input=stream, capture_output=True
            )
            if done.returncode != 0:
                raise ShipError(f"layer {layer.id}: tar: {_first_line(done.stderr)}")
            take_shipped_layer(store, layer, files)
        finally:
            shutil.rmtree(files, ignore_errors=True)


def fetch(node: str, source: str, store: LayerStore, checkpoint: str) -> bool:
    """Ship `checkpoint` from the store at `source` on node `node` into `store`; False when
    that node is gone or its store does not hold the checkpoint (or this process is on no
    cluster: then there is no node to ship from)."""
    if not ray.is_initialized():
        return False
    pinned = _pack_remote.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
    )
    try:
        shipment = ray.get(pinned.remote(source, checkpoint, frozenset(store.sealed_ids())))
    except RayError:
        return False
    if shipment is None:
        return False
    unpack(store, shipment)
    return True


@ray.remote(num_cpus=0, max_retries=0)
def _pack_remote(source: str, checkpoint: str, present: frozenset[str]) -> Shipment | None:
    """`pack` on the node holding the store at `source`; None when it is no store there or
    lacks the checkpoint."""
    if not os.path.isfile(os.path.join(source, "store.json")):
        return None
    store = LayerStore(source)
    try:
        store.layer(checkpoint)
    except SandboxError:
        return None
    return pack(store, checkpoint, present)


def _first_line(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else "failed"
