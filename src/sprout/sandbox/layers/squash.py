"""Squashing a deep stack: one layer holding the whole stack under a checkpoint.

A stack grows by one layer a turn, but overlayfs stacks at most 500 lower layers and the
legacy mount option that lists them is one page long. So every `LayerStore.max_stack`
layers sealing merges the stack into one flat layer, hard-linking its files, or cloning
them across btrfs subvolumes (a capped store's layers), so no file's data is copied where
the filesystem can clone. The flat layer's size is what it owns (`extents`): its
directories, not the blocks it shares with the stack. The checkpoint keeps its id and its
parent; the flat copy is only what gets mounted (`LayerStore.stack`), and made durable
with the layer it was squashed for (`LayerStore.seal`).
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import replace

from sprout.sandbox.layers.layer_files import LayerFiles
from sprout.sandbox.layers.meta import Layer
from sprout.sandbox.layers.whiteouts import merge
from sprout.sandbox.storefs.extents import disk_usage


def squash(store: LayerFiles, layer: Layer) -> Layer:
    """Merge the stack under `layer`, being sealed, into one new layer, and return `layer`
    with that flat copy recorded: the caller seals it so, its metadata written last (a
    squash that fails leaves the layer unsealed, and the flat copy no checkpoint keeps)."""
    flat_id = secrets.token_hex(5)
    flat_dir = store.diff_dir(flat_id)
    os.mkdir(flat_dir)
    below = [] if layer.parent is None else store.stack(layer.parent)
    merge(
        [store.diff_dir(i) for i in [layer.id, *below]],
        flat_dir,
        store.format,
        keep_markers=True,
        link_files=True,
        image=store.image_root(layer.config),
    )
    flat = Layer(
        flat_id, None, disk_usage(flat_dir), 1, time.time(), layer.config, squash_of=layer.id
    )
    store.save_meta(flat)
    return replace(layer, flat=flat_id)
