"""The notes in the machine's cache that name a run's layer store, and whether it is there.

The cache keeps what run stores stand on: base layers they link
(`sprout.images.bases`) and images they built their own base layers over
(`sprout.images.runstores`). Each such store leaves a note naming it. A run folder
can be moved (its store's path changes) or deleted, and nothing in the cache can
tell which. So a note records both the path the store was used at and its real
path: on sprout's store filesystem that is a folder a move of the run folder
leaves where it is. A store found at neither is *lost*: `sprout gc` keeps what the
note says it needed unless told `--orphan`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class StoreNote:
    """A layer store as a note in the cache names it."""

    store: str
    """The path it was used at (a run's `layers/`, a link among them)."""
    real: str
    """Its real path when noted."""

    @classmethod
    def of(cls, path: str) -> StoreNote:
        return cls(path, os.path.realpath(path))

    def found(self) -> str | None:
        """Where the store is now (its path, else its real path), or None: lost."""
        for path in (self.store, self.real):
            if path and os.path.isfile(os.path.join(path, "store.json")):
                return path
        return None
