"""Sharing checkpoints between layer stores by linking, never copying, their layers.

Every run folder has its own layer store, but a task's base layer (its image and set-up)
is built once per machine: a run's store adopts it from the machine-wide cache
(`sprout.images.base_layers`) with a link per layer.
"""

from __future__ import annotations

import os

from sprout.sandbox.errors import BadArgument
from sprout.sandbox.layers.layer_files import LayerFiles
from sprout.sandbox.layers.meta import Layer, meta_path
from sprout.sandbox.layers.private import link_private, take_private


def needed_layers(source: LayerFiles, layer_id: str) -> list[str]:
    """The layers checkpoint `layer_id` needs (its ancestry and their squashed copies),
    bottom first: the order in which another store can take them, each after its parent."""
    wanted: list[str] = []
    for layer_id_below in source.ancestry(layer_id):
        wanted.append(layer_id_below)
        flat = source.layer(layer_id_below).flat
        if flat is not None:
            wanted.append(flat)
    return wanted[::-1]


def take_shipped_layer(
    store: LayerFiles, layer: Layer, files: str, private: str | None = None
) -> None:
    """Make sealed `layer` of another store one of `store`'s, its files already unpacked at
    `files` and its private files (`sprout.sandbox.layers.private`) at `private` (directories
    on `store`'s filesystem, moved into place): what a store that cannot link the other
    store's layers (another machine's) does with shipped ones."""
    os.rename(files, store.diff_dir(layer.id))
    if private is not None:
        take_private(store, layer.id, private)
    store.save_meta(layer)
    store.flushes.hand_over(layer)


def adopt(store: LayerFiles, source: LayerFiles, layer_id: str) -> str:
    """Make checkpoint `layer_id` of `source` one of `store`'s (see `LayerStore.adopt`)."""
    if store.mode == "copy" or (source.mode, source.ids) != (store.mode, store.ids):
        raise BadArgument(
            "source", f"{source.path}: layers of a {source.mode} store with ids "
            f"{source.ids} cannot be shared with a {store.mode} store with ids {store.ids}"
        )  # fmt: skip
    for shared in needed_layers(source, layer_id):
        if os.path.exists(meta_path(store.meta_dir, shared)):
            continue
        link = store.diff_dir(shared)
        if not os.path.lexists(link):
            os.symlink(os.path.realpath(source.diff_dir(shared)), link)
        link_private(store, source, shared)
        store.save_meta(source.layer(shared))
        store.flushes.hand_over(source.layer(shared))
    return layer_id
