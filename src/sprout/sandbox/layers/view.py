"""What the layer store's helpers (GC, squash, sharing between stores) see of a store.

They are the bodies of `LayerStore` methods, kept in modules of their own; typing them
against this protocol instead of `LayerStore` keeps the store the only module that
imports them, and says exactly which of its parts each one may touch.
"""

from __future__ import annotations

from typing import Protocol

from sprout.sandbox.jail.idmap import IdRange
from sprout.sandbox.jail.modes import StoreMode
from sprout.sandbox.layers.meta import Layer
from sprout.sandbox.layers.whiteouts import LayerFormat
from sprout.sandbox.types import SandboxConfig


class HandOver(Protocol):
    """A store's side of its flusher (`layers.flusher.StoreFlushes`), as its helpers use it."""

    def hand_over(self, layer: Layer) -> None: ...


class StoreView(Protocol):
    """A layer store, as its helpers use it."""

    path: str
    durable: bool
    mode: StoreMode
    ids: IdRange | None
    capped: bool
    format: LayerFormat
    meta_dir: str
    refs_dir: str

    @property
    def flushes(self) -> HandOver: ...
    def image_root(self, config: SandboxConfig) -> str | None: ...
    def diff_dir(self, layer_id: str) -> str: ...
    def scratch_dir(self, layer_id: str) -> str: ...
    def layer(self, layer_id: str) -> Layer: ...
    def ancestry(self, layer_id: str) -> list[str]: ...
    def stack(self, layer_id: str) -> list[str]: ...
    def ref(self, name: str) -> str | None: ...
    def save_meta(self, layer: Layer) -> None: ...
    def discard(self, layer_id: str) -> None: ...
    def free(self, layer_id: str) -> None: ...
    def live_holds(self) -> tuple[dict[str, str | None], list[str]]: ...
    def sealed_ids(self) -> list[str]: ...
