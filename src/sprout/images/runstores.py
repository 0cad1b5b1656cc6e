"""Which layer stores outside the machine's cache stand on which of its images.

A run's store can hold base layers of its own over an image of the cache (a
`copy` store, or one with other ids than the machine's: see
`sprout.images.bases.shared_store`), which the cache's stores of base layers
know nothing of. Freeing such an image would leave that run's checkpoints
without their root filesystem. So each store that bases a task on an image of
the cache leaves a note in the cache, and `sprout gc --images` keeps the images
of every store that is still there:

    SPROUT_CACHE/images/stores/HASH       {"store": PATH, "real": PATH, "images": [DIGEST, ...]}
    SPROUT_CACHE/images/stores/HASH.lock  held while the note changes

A note whose store is lost (no `store.json` at its path nor at its real path: the
run folder was deleted, or moved) keeps its images until `sprout gc --orphan`
drops it (`sprout.images.store_notes`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from sprout.durable import file_lock, write_atomically
from sprout.images.cache import STORES, ImageCache
from sprout.images.store_notes import StoreNote


def _notes(cache: ImageCache) -> Path:
    return cache.root / STORES


def note_image(store: str, digest: str, cache: ImageCache | None = None) -> None:
    """Note that layer store `store` stands on image `digest` of the cache (once: a note
    that has it already is left as it is)."""
    folder = _notes(cache or ImageCache())
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
    cache: ImageCache | None = None, *, forget_lost: bool = False
) -> dict[str, list[str]]:
    """Image digest -> the stores that stand on it: those still on this machine, and those
    lost (deleted, or moved: see `sprout.images.store_notes`), said so; with `forget_lost`
    the notes of lost stores are dropped instead."""
    folder = _notes(cache or ImageCache())
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
