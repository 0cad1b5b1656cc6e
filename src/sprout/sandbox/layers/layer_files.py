"""A layer store's layers on disk: the files each layer holds and the records kept beside
them, which `LayerStore` (layers/store.py) builds on.

The store's helpers that take it back (GC, sharing between stores, squashing deep stacks,
private files) are handed a `LayerFiles`, the real class the store is, and see no more of
it than this: the folders of a layer (`l/ID` its files, `w/ID` an unsealed layer's scratch,
`s/ID` its subvolume where layers are capped, `p/ID` its private files), sealed layers'
metadata (`m/`, cached once read), holds (`h/`), named checkpoints (`r/`), the store's mode
(`store.json`) and its side of its filesystem's flusher (`StoreFlushes`).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable

from sprout.sandbox.errors import UnknownCheckpoint
from sprout.sandbox.jail.modes import StoreMode
from sprout.sandbox.layers.flusher import flusher_of, fsync_each
from sprout.sandbox.layers.holds import read_holds
from sprout.sandbox.layers.meta import Layer, counted, meta_path, read_meta, sealed_ids, write_meta
from sprout.sandbox.layers.refs import read_ref
from sprout.sandbox.layers.store_json import open_store_format
from sprout.sandbox.layers.whiteouts import LayerFormat, MarkerFormat, OverlayFormat
from sprout.sandbox.storefs.files import remove_tree
from sprout.sandbox.storefs.quota import disk_cap_support
from sprout.sandbox.types import SandboxConfig

PRIVATE = "p"
"""The folder of the store that holds sealed layers' private files (layers/private.py)."""


def private_dir(store_path: str, layer_id: str) -> str:
    """Where layer `layer_id`'s private files are (a link into another store's, for an
    adopted layer); it may not exist."""
    return os.path.join(store_path, PRIVATE, layer_id)


def remove_private(store_path: str, layer_id: str) -> None:
    """Remove layer `layer_id`'s private files (only the link, for an adopted layer)."""
    folder = private_dir(store_path, layer_id)
    if os.path.islink(folder):
        os.unlink(folder)
    elif os.path.isdir(folder):
        remove_tree(folder)


class LayerFiles:
    """The layers of the store at `path` (made there when new, in `mode`), as files.

    `durable` flushes each layer to disk once it is sealed, beside the next turn
    (`flushes`); `wait_durable` says when."""

    def __init__(self, path: str, mode: StoreMode | None, *, durable: bool) -> None:
        self.path = path
        self.durable = durable
        self.meta_dir = os.path.join(self.path, "m")
        """Sealed layers' metadata (layers.meta)."""
        self.refs_dir = os.path.join(self.path, "r")  # named checkpoints (layers.refs)
        self._cache: dict[str, Layer] = {}
        for sub in ("l", "m", "w", "h", "r"):
            os.makedirs(os.path.join(self.path, sub), exist_ok=True)
        self.mode, self.ids = open_store_format(os.path.join(self.path, "store.json"), mode)
        """The store's mode, and as root the host ids sandbox ids 0.. are (jail.idmap)."""
        self.capped = self.mode == "root" and disk_cap_support(self.path).enforced
        """Layers are subvolumes whose bytes the kernel caps (see sprout.sandbox.storefs.quota)."""
        self.format: LayerFormat = (
            MarkerFormat()
            if self.mode == "copy"
            else OverlayFormat("trusted" if self.mode == "root" else "user")
        )
        self.flushes = StoreFlushes(self)
        """Its side of its filesystem's flusher (layers.flusher)."""

    def image_root(self, config: SandboxConfig) -> str | None:
        """The directory under a stack's bottom layer (None: the copy backend has none)."""
        if self.mode == "copy":
            return None
        return "/" if config.image == "host" else config.image

    def diff_dir(self, layer_id: str) -> str:
        """The directory holding a layer's files (sealed or not)."""
        return os.path.join(self.path, "l", layer_id)

    def scratch_dir(self, layer_id: str) -> str:
        """Scratch space of an unsealed layer: the overlay workdir and mountpoint live here."""
        return os.path.join(self.path, "w", layer_id)

    def work_dir(self, layer_id: str) -> str:
        """The overlay workdir of an unsealed layer (in its subvolume when the layer has one:
        overlayfs renames from it into the upper directory)."""
        subvolume = os.path.join(self.path, "s", layer_id)
        if os.path.isdir(subvolume):
            return os.path.join(subvolume, "w")
        return os.path.join(self.scratch_dir(layer_id), "w")

    def layer(self, layer_id: str) -> Layer:
        """The sealed layer `layer_id`; UnknownCheckpoint when there is none."""
        cached = self._cache.get(layer_id)
        if cached is not None:
            return cached
        if not isinstance(layer_id, str) or not layer_id.isalnum():
            raise UnknownCheckpoint(str(layer_id), self.path)
        found = read_meta(self.meta_dir, layer_id)
        if found is None:
            raise UnknownCheckpoint(layer_id, self.path)
        self._cache[layer_id] = found
        return found

    def ancestry(self, layer_id: str) -> list[str]:
        """Every layer from `layer_id` down to its base, top first."""
        chain = []
        current: str | None = layer_id
        while current is not None:
            chain.append(current)
            current = self.layer(current).parent
        return chain

    def stack(self, layer_id: str) -> list[str]:
        """The layers to mount for `layer_id`, top first, using squashed copies where made."""
        chain = []
        current: str | None = layer_id
        while current is not None:
            found = self.layer(current)
            if found.flat is not None:
                chain.append(found.flat)
                break
            chain.append(current)
            current = found.parent
        return chain

    def ref(self, name: str) -> str | None:
        """The checkpoint saved under `name`, or None (also when GC or a crash lost it)."""
        layer_id = read_ref(self.refs_dir, name)
        if layer_id is None:
            return None
        try:
            return self.layer(layer_id).id
        except UnknownCheckpoint:
            return None

    def save_meta(self, layer: Layer) -> None:
        """Write `layer`'s metadata, atomically; `flushes.hand_over` makes it durable."""
        write_meta(self.meta_dir, layer)
        self._cache[layer.id] = layer

    def wait_durable(self, *layer_ids: str, timeout: float | None = None) -> bool:
        """Wait until each of `layer_ids`, and all it stacks on, is on disk (at once in a store
        not `durable`, for a layer flushed already or sealed by an earlier process); False
        when `timeout` seconds passed first; FlushFailed (store, OS error) when a flush failed."""
        return self.flushes.wait(layer_ids, timeout)

    def _remove_files(self, layer_id: str) -> None:
        """Delete a layer's files, subvolume (even one not linked yet) and private files."""
        files = self.diff_dir(layer_id)
        remove_tree(os.path.join(self.path, "s", layer_id))
        remove_private(self.path, layer_id)
        if os.path.islink(files):
            os.unlink(files)
        else:
            remove_tree(files)

    def discard(self, layer_id: str) -> None:
        """Drop an unsealed layer, its scratch and hold (a sealed layer's files are GC's)."""
        if not os.path.exists(meta_path(self.meta_dir, layer_id)):
            self._remove_files(layer_id)
        remove_tree(self.scratch_dir(layer_id))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.path, "h", layer_id))

    def free(self, layer_id: str) -> None:
        """Remove sealed layer `layer_id`, its metadata first (it is no checkpoint from then
        on): GC's last step, once it has made sure that nothing stacks on the layer."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(meta_path(self.meta_dir, layer_id))
        self._cache.pop(layer_id, None)
        self.discard(layer_id)

    def live_holds(self) -> tuple[dict[str, str | None], list[str]]:
        """Holds of live processes (layer id -> parent), and the layers of dead ones."""
        return read_holds(os.path.join(self.path, "h"))

    def sealed_ids(self) -> list[str]:
        """The ids of every sealed layer."""
        return sealed_ids(self.meta_dir)

    def layers(self) -> list[Layer]:
        """Every sealed layer, with its reference count filled in."""
        return counted([self.layer(i) for i in self.sealed_ids()], self.live_holds()[0].values())


class StoreFlushes:
    """A layer store's side of its filesystem's flusher (nothing for a store that is not
    `durable`)."""

    def __init__(self, store: LayerFiles) -> None:
        self._layer_files = store
        self._key = os.path.realpath(store.path)
        self._flusher = flusher_of(store.path) if store.durable else None

    def hand_over(self, layer: Layer) -> None:
        """Flush sealed `layer` with the next batch: without syncfs, by fsyncing its files,
        its squashed copy's folders (their files are links to data flushed with their own
        layers, unless the copy cloned them across subvolumes) and both metadata files."""
        if self._flusher is None:
            return
        store = self._layer_files
        trees = [(store.diff_dir(layer.id), True)]
        if layer.flat is not None:
            trees.append((store.diff_dir(layer.flat), store.capped))
        metas = [meta_path(store.meta_dir, i) for i in (layer.id, layer.flat) if i is not None]
        below = None if layer.parent is None else (self._key, layer.parent)
        fallback = functools.partial(fsync_each, trees, metas, store.meta_dir)
        self._flusher.submit((self._key, layer.id), fallback, below)

    def wait(self, layer_ids: Iterable[str], timeout: float | None) -> bool:
        """`Flusher.wait` for layers of this store."""
        if self._flusher is None:
            return True
        return self._flusher.wait([(self._key, i) for i in layer_ids], timeout)
