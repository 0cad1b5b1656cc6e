"""Where a task lives on the cluster: its `TaskHost` actor, that actor's node and store.

Every call the driver makes to a task's sandboxes goes through `Place.call`, the one
spot that tells a node that died (the actor is gone with it) from a sandbox that
failed: the first is the place's fault, reported once, and a `WorkspaceError` naming
the node; the second is the actor's own exception, raised as it was.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ray.exceptions import RayActorError

from sprout.workspace import WorkspaceError


class Place:
    """A task's `TaskHost` actor on node `node`, with its layer store at `store`."""

    def __init__(self, actor: Any, node: str, store: str, on_lost: Callable[[Place], None]) -> None:
        self.actor = actor
        self.node = node
        self.store = store
        self._on_lost = on_lost
        self._lost = threading.Event()

    @property
    def lost(self) -> bool:
        return self._lost.is_set()

    def call(self, method: str, *args: Any) -> Any:
        """`method(*args)` on the actor, waited for; a WorkspaceError when its node died."""
        import ray

        if self.lost:
            raise WorkspaceError(f"node {self.node} died")
        try:
            return ray.get(getattr(self.actor, method).remote(*args))
        except RayActorError:
            if not self._lost.is_set():
                self._lost.set()
                self._on_lost(self)
            raise WorkspaceError(f"node {self.node} died") from None
