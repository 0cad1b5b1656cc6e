"""Sharing checkpoints between layer stores by linking, never copying, their layers.

Every run folder has its own layer store, but a task's base layer (its image and set-up)
is built once per machine: a run's store adopts it from the machine-wide cache
(`sprout.images.bases`) with a link per layer.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sprout.sandbox.errors import BadArgument
from sprout.sandbox.layer_meta import meta_path

if TYPE_CHECKING:
    from sprout.sandbox.layers import LayerStore


def adopt(store: LayerStore, source: LayerStore, layer_id: str) -> str:
    """Make checkpoint `layer_id` of `source` one of `store`'s (see `LayerStore.adopt`)."""
    if store.mode == "copy" or (source.mode, source.ids) != (store.mode, store.ids):
        raise BadArgument(
            "source", f"{source.path}: layers of a {source.mode} store with ids "
            f"{source.ids} cannot be shared with a {store.mode} store with ids {store.ids}"
        )  # fmt: skip
    wanted: list[str] = []
    for layer_id_below in source.ancestry(layer_id):
        wanted.append(layer_id_below)
        flat = source.layer(layer_id_below).flat
        if flat is not None:
            wanted.append(flat)
    for shared in reversed(wanted):  # bottom first: a layer is sealed after its parent
        if os.path.exists(meta_path(store._meta, shared)):
            continue
        link = store.diff_dir(shared)
        if not os.path.lexists(link):
            os.symlink(os.path.realpath(source.diff_dir(shared)), link)
        store._write_meta(source.layer(shared))
    return layer_id
