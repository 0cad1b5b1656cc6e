"""Which layer stores stand on which images of the machine's cache, so that collecting
images (`sprout gc --images`) never takes the root filesystem from under a checkpoint.

A store can stand on an image of the cache directly (a sandbox made on it, a run's own
base layers over it: a `copy` store, or one with other ids than the machine's, see
`sprout.images.base_layers.shared_store`), which the cache's own stores of base layers know
nothing of. So each such store leaves a note in the cache, and `sprout gc --images`
keeps the images of every store that is still there:

    SPROUT_CACHE/images/stores/HASH       {"store": PATH, "real": PATH, "images": [DIGEST, ...]}
    SPROUT_CACHE/images/stores/HASH.lock  held while the note changes

A run folder can be moved (its store's path changes) or deleted, and nothing in the
cache can tell which. So a note records both the path the store was used at and its real
path: on sprout's store filesystem that is a folder a move of the run folder leaves where
it is. A store found at neither is *lost*: `sprout gc` keeps what the note says it needed
unless told `--orphan`, which drops the note.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from sprout.durable import file_lock, write_atomically
from sprout.sandbox.rootfs.catalog import STORES, ImageCatalog


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


def _notes(catalog: ImageCatalog) -> Path:
    return catalog.root / STORES


def note_image(store: str, digest: str, catalog: ImageCatalog | None = None) -> None:
    """Note that layer store `store` stands on image `digest` of the cache (once: a note
    that has it already is left as it is)."""
    folder = _notes(catalog or ImageCatalog())
    folder.mkdir(parents=True, exist_ok=True)
    note = folder / hashlib.sha256(store.encode()).hexdigest()[:20]
    with file_lock(f"{note}.lock"):
        _, images = _read(note)
        if digest in images:
            return
        named = StoreNote.of(store)
        text = json.dumps(
            {"store": named.store, "real": named.real, "images": sorted({*images, digest})},
            indent=2,
        )
        write_atomically(str(note), text, durable=True)


def stores_by_image(
    catalog: ImageCatalog | None = None, *, forget_lost: bool = False
) -> dict[str, list[str]]:
    """Image digest -> the stores that stand on it: those still on this machine, and those
    lost (deleted, or moved), said so; with `forget_lost` the notes of lost stores are
    dropped instead."""
    folder = _notes(catalog or ImageCatalog())
    found: dict[str, list[str]] = {}
    if not folder.is_dir():
        return found
    for note in sorted(folder.iterdir()):
        if note.suffix in (".lock", ".tmp"):
            continue
        named, images = _read(note)
        where = named.found() if named is not None else None
        if named is None or (where is None and forget_lost):
            with contextlib.suppress(FileNotFoundError):
                note.unlink()
            continue
        shown = where or f"{named.store} (lost: deleted or moved; --orphan forgets it)"
        for digest in images:
            found.setdefault(digest, []).append(shown)
    return found


def _read(note: Path) -> tuple[StoreNote | None, list[str]]:
    """(the store, the digests of the images it stands on); (None, []) for no or a bad
    note. A note from before real paths were noted names its store's path twice."""
    try:
        data = json.loads(note.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None, []
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        return None, []
    store = str(data.get("store", ""))
    if not store:
        return None, []
    named = StoreNote(store, str(data.get("real", store)))
    return named, [str(digest) for digest in data["images"]]
