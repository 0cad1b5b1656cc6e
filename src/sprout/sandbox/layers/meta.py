"""A sealed layer's metadata (`m/ID.json` in a layer store): its id, parent, size and depth.

Written last when a layer is sealed, so a layer with metadata is a checkpoint and one
without is a turn's unfinished writes (see `sprout.sandbox.layers.store`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import cast

from sprout.durable import write_atomically
from sprout.sandbox.types import SandboxConfig


@dataclass(frozen=True)
class Layer:
    """A sealed layer: one turn's writes, stacked on its parent."""

    id: str
    parent: str | None
    size: int
    """Bytes on disk the layer owned when it was sealed: each inode once, only blocks no
    other layer shares (a copy-up's clone of a lower file counts what the turn wrote;
    see `sprout.sandbox.storefs.extents`)."""
    depth: int
    """Layers from the base layer (which has depth 1)."""
    created: float
    config: SandboxConfig
    flat: str | None = None
    """A squashed layer holding the whole stack that ends here, when one was made."""
    squash_of: str | None = None
    """On a squashed layer: the layer whose stack it holds."""
    refcount: int = 0
    """Sealed children plus open sandboxes writing on top (filled in by `layers()`)."""

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "parent": self.parent,
            "size": self.size,
            "depth": self.depth,
            "created": self.created,
            "config": self.config.to_json(),
            "flat": self.flat,
            "squash_of": self.squash_of,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Layer:
        return cls(
            id=str(data["id"]),
            parent=cast("str | None", data["parent"]),
            size=int(cast(int, data["size"])),
            depth=int(cast(int, data["depth"])),
            created=float(cast(float, data["created"])),
            config=SandboxConfig.from_json(cast("dict[str, object]", data["config"])),
            flat=cast("str | None", data.get("flat")),
            squash_of=cast("str | None", data.get("squash_of")),
        )


def meta_path(meta_dir: str, layer_id: str) -> str:
    """Where layer `layer_id`'s metadata lives; the layer is sealed once this file exists."""
    return os.path.join(meta_dir, f"{layer_id}.json")


def read_meta(meta_dir: str, layer_id: str) -> Layer | None:
    """The sealed layer `layer_id`, or None when it is not sealed (or does not exist)."""
    try:
        with open(meta_path(meta_dir, layer_id), encoding="utf-8") as handle:
            return Layer.from_json(json.load(handle))
    except FileNotFoundError:
        return None


def write_meta(meta_dir: str, layer: Layer) -> None:
    """Seal `layer`: its metadata, written atomically. Not flushed: a durable store's
    flusher makes it durable with the layer's files (`sprout.sandbox.layers.flusher`)."""
    write_atomically(meta_path(meta_dir, layer.id), json.dumps(layer.to_json()), False)


def sealed_ids(meta_dir: str) -> list[str]:
    """The ids of every sealed layer."""
    return [name[:-5] for name in os.listdir(meta_dir) if name.endswith(".json")]


def counted(layers: Iterable[Layer], held: Iterable[str | None]) -> list[Layer]:
    """`layers`, oldest first, each with its reference count: how many of them stack on it,
    plus how many open sandboxes write on top of it (`held`: the parent of each)."""
    found = list(layers)
    counts = Counter(item.parent for item in found)
    counts.update(held)
    return sorted(
        (replace(item, refcount=counts[item.id]) for item in found),
        key=lambda item: (item.created, item.id),
    )
