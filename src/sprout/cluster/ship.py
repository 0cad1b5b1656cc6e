"""Shipping a checkpoint's layers between nodes that cannot read each other's stores.

A layer is a directory; the layers a checkpoint needs and the receiving store lacks are
packed, one tar stream each (GNU tar, keeping owners, modes, times, device whiteouts and
the overlay xattrs that mark opaque directories), by a Ray task pinned to the node that
holds them, and come back through Ray's object store to be unpacked on the receiving node.
A layer's private files (the git history cut from a task's checkpoint 0, which its
verifier needs on whichever node it runs) travel with it, in a stream of their own.
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
from sprout.sandbox import (
    Layer,
    LayerStore,
    SandboxError,
    needed_layers,
    private_dir,
    take_shipped_layer,
)

TAR = ("tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--acls")
"""Every attribute a layer's files carry that overlayfs or the sandbox reads."""

Shipment = list[tuple[Layer, bytes, bytes | None]]
"""The layers one checkpoint needs, bottom first, each with its files as a tar stream, and
its private files as another (None: it has none)."""


class ShipError(SproutError, RuntimeError):
    """Layers that could not be packed or unpacked: the tar command's own line."""


def pack(store: LayerStore, checkpoint: str, present: Collection[str]) -> Shipment:
    """The layers of `checkpoint` in `store` that are not in `present`, packed."""
    packed: Shipment = []
    for layer_id in needed_layers(store, checkpoint):
        if layer_id in present:
            continue
        files = _tar(layer_id, store.diff_dir(layer_id))
        private = private_dir(store.path, layer_id)
        kept = _tar(layer_id, private) if os.path.isdir(private) else None
        packed.append((store.layer(layer_id), files, kept))
    return packed


def _tar(layer_id: str, folder: str) -> bytes:
    """`folder` as a tar stream (`folder` may be a link: l/ID to a subvolume, p/ID to the
    store the layer was adopted from)."""
    done = subprocess.run(
        [*TAR, "-C", os.path.realpath(folder), "-cf", "-", "."], capture_output=True
    )
    if done.returncode != 0:
        raise ShipError(f"layer {layer_id}: tar: {_first_line(done.stderr)}")
    return done.stdout


def unpack(store: LayerStore, shipment: Shipment) -> None:
    """Make the shipped layers `store`'s (each after its parent; ones it has are skipped)."""
    for layer, stream, private_stream in shipment:
        try:
            store.layer(layer.id)
            continue
        except SandboxError:
            pass
        scratch = tempfile.mkdtemp(prefix=f".ship-{layer.id}-", dir=os.path.join(store.path, "w"))
        try:
            files = _untar(layer.id, stream, os.path.join(scratch, "files"))
            private = None
            if private_stream is not None:
                private = _untar(layer.id, private_stream, os.path.join(scratch, "private"))
            take_shipped_layer(store, layer, files, private)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def _untar(layer_id: str, stream: bytes, folder: str) -> str:
    """Unpack `stream` into `folder`, a new directory; returns it."""
    os.mkdir(folder, 0o700)
    done = subprocess.run([*TAR, "-C", folder, "-xpf", "-"], input=stream, capture_output=True)
    if done.returncode != 0:
        raise ShipError(f"layer {layer_id}: tar: {_first_line(done.stderr)}")
    return folder


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
