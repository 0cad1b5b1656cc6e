"""Collecting the machine's cache: base layers no run uses any more, and images under them.

A base layer is kept while a run folder on the machine links it (its store
holds a link to it, see `sprout.images.base_layers`) or while it was used within the
last `keep_days`. Images are collected only when asked, and only those that
nothing stands on: no kept base layer of the cache, and no layer store outside
it that noted it (`sprout.sandbox.rootfs.notes`: a run's own base layers, a sandbox of
the API made on it). An image is something a user built or imported by name, a base
layer only a cache entry.
Stores on sprout's store filesystem whose link is gone are removed only when asked
(`orphan`): a run folder moved and not opened since looks the same as a deleted one.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from sprout.images.base_layers import collecting, linked_by_runs, shared_stores
from sprout.images.blobs import blob_dir
from sprout.images.cache import ImageCache
from sprout.images.chains import collect_chains
from sprout.sandbox import (
    LayerStore,
    orphan_stores,
    remove_orphan_store,
    store_fs_root,
    stores_by_image,
)


@dataclass
class Collected:
    """What `collect` removed (or, dry, would remove), and which images it kept, why."""

    bases: int = 0
    """Named base layers forgotten."""
    bytes_freed: int = 0
    images: list[str] = field(default_factory=list)
    """Digests of the images removed."""
    names: list[str] = field(default_factory=list)
    """The base layers forgotten, by name."""
    layers: list[str] = field(default_factory=list)
    """The layers freed with them (and debris of dead processes), by id."""
    kept_images: dict[str, str] = field(default_factory=dict)
    """With `images`: digest -> why it stays (what stands on it)."""
    orphans: list[str] = field(default_factory=list)
    """Stores of sprout's store filesystem whose run folder is gone, by the path that
    linked them: removed with `orphan`, else only counted."""
    orphan_bytes: int = 0
    """What the stores in `orphans` hold."""
    blobs: int = 0
    """With `images`: blobs of the pull cache that no remaining image was pulled with."""
    chains: int = 0
    """With `images`: unpacked layers images shared that no remaining image starts with."""


def collect(
    *, keep_days: float = 7.0, images: bool = False, orphan: bool = False, dry_run: bool = False
) -> Collected:
    """Free base layers that no run links and nobody used for `keep_days`; with `images`,
    also every image that neither a remaining base layer nor a run's own store stands on;
    with `orphan`, the stores of the store filesystem whose link is gone (a run folder
    deleted, or moved and not opened since: which, nothing here can tell). `dry_run` only
    says what would go."""
    done = Collected()
    _collect_orphans(orphan and not dry_run, done)  # first: what only they stood on goes too
    if orphan:
        done.bytes_freed += done.orphan_bytes
    horizon = time.time() - keep_days * 86400
    standing_on: set[str] = set()
    for store in shared_stores():
        with collecting(store):
            standing_on |= _collect_bases(store, horizon, orphan, dry_run, done)
    if images:
        _collect_images(standing_on, orphan, dry_run, done)
        _collect_blobs(dry_run, done)
        gone = set(done.images) if dry_run else set()
        done.chains, freed = collect_chains(ImageCache(), gone, BLOB_GRACE_S, dry_run)
        done.bytes_freed += freed
    return done


BLOB_GRACE_S = 3600.0
"""A blob younger than this may belong to a pull under way, whose image is not yet named."""


def _collect_blobs(dry_run: bool, done: Collected) -> None:
    """Remove the blobs that no image left in the cache was pulled with (dry: count them)."""
    cache = ImageCache()
    gone = set(done.images) if dry_run else set()  # dry, they are still there
    kept = {
        d
        for image in cache.images()
        if image.digest not in gone
        for d in image.source.get("blobs") or []
    }
    horizon = time.time() - BLOB_GRACE_S
    for path in sorted(blob_dir(cache).glob("*/*")):
        stat = path.stat()
        if f"{path.parent.name}:{path.name}" in kept or stat.st_mtime > horizon:
            continue
        if not dry_run:
            path.unlink()
        done.blobs += 1
        done.bytes_freed += stat.st_size


def _collect_orphans(remove: bool, done: Collected) -> None:
    """Name (and with `remove`, remove) the stores of the store filesystem whose link is
    gone: their layers stay on the image, unreachable by any run folder that nothing
    moved."""
    for found in orphan_stores(store_fs_root()):
        if not remove or remove_orphan_store(found):
            done.orphans.append(found.owner)
            done.orphan_bytes += found.bytes


def _collect_bases(
    store: LayerStore, horizon: float, orphan: bool, dry_run: bool, done: Collected
) -> set[str]:
    """Collect one store of base layers into `done`; the root filesystems (real paths) that
    its remaining layers stand on. What lost run stores were lent is kept unless `orphan`."""
    linked = linked_by_runs(store, forget_lost=orphan and not dry_run)
    forget = []
    for ref in sorted(Path(store.path, "r").iterdir()):
        if ref.name.endswith(".tmp"):
            continue
        layer_id = store.ref(ref.name)
        in_use = layer_id is not None and layer_id in linked
        if not in_use and ref.stat().st_mtime < horizon:
            forget.append(ref.name)
    freed = store.collect(references=linked.copy, forget=forget, dry_run=dry_run)
    done.bases += len(forget)
    done.names += forget
    done.layers += [*freed.layers, *freed.debris]
    done.bytes_freed += freed.bytes_freed
    gone = set(freed.layers)
    return {
        os.path.realpath(layer.config.image) for layer in store.layers() if layer.id not in gone
    }


def _collect_images(standing_on: set[str], orphan: bool, dry_run: bool, done: Collected) -> None:
    """Remove (dry: name) the images nothing stands on; say in `done` why the others stay.
    What lost run stores stood on stays unless `orphan`."""
    cache = ImageCache()
    stores = stores_by_image(cache, forget_lost=orphan and not dry_run)
    for image in cache.images():
        if os.path.realpath(image.rootfs) in standing_on:
            done.kept_images[image.digest] = "base layers of the machine's cache stand on it"
        elif image.digest in stores:
            named = ", ".join(stores[image.digest][:3])
            more = len(stores[image.digest]) - 3
            named += f" and {more} more" if more > 0 else ""
            done.kept_images[image.digest] = f"layer stores of runs stand on it: {named}"
        else:
            if not dry_run:
                cache.remove_image(image.digest)
            done.images.append(image.digest)
            done.bytes_freed += image.size
