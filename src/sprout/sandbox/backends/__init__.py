"""Where a sandbox's calls run: the backend for a store's mode (the overlay's namespaces,
or the copy fallback), behind the protocol of `sprout.sandbox.backends.protocol`."""

from __future__ import annotations

from sprout.sandbox.backends.protocol import Backend
from sprout.sandbox.layers.store import LayerStore


def backend_for(store: LayerStore) -> Backend:
    """The backend that runs calls over `store`'s layers."""
    if store.mode == "copy":
        from sprout.sandbox.backends.copy import CopyBackend

        return CopyBackend()
    from sprout.sandbox.backends.overlay import OverlayBackend

    return OverlayBackend(store)
