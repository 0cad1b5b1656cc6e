"""Which layer stores outside the machine's cache stand on which of its images.

A run's store can hold base layers of its own over an image of the cache (a
`copy` store, or one with other ids than the machine's: see
`sprout.images.bases.shared_store`), which the cache's stores of base layers
know nothing of. Freeing such an image would leave that run's checkpoints
without their root filesystem. So each store that bases a task on an image of
the cache leaves a note in the cache, and `sprout gc --images` keeps the images
of every store that is still there:

    SPROUT_CACHE/images/stores/HASH       {"store": PATH, "images": [DIGEST, ...]}
    SPROUT_CACHE/images/stores/HASH.lock  held while the note changes

A note whose store is gone (no `store.json`: the run folder was deleted) is
dropped when read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from sprout.durable import file_lock, write_atomically
from sprout.images.cache import STORES, ImageCache


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
        text = json.dumps({"store": store, "images": sorted({*images, digest})}, indent=2)
        write_atomically(str(note), text, durable=True)


def stores_by_image(cache: ImageCache | None = None) -> dict[str, list[str]]:
    """Image digest -> the stores still on this machine that stand on it; notes of stores
    that are gone are dropped."""
    folder = _notes(cache or ImageCache())
    found: dict[str, list[str]] = {}
    if not folder.is_dir():
        return found
    for note in sorted(folder.iterdir()):
        if note.suffix in (".lock", ".tmp"):
            continue
        store, images = _read(note)
        if not store or not Path(store, "store.json").exists():
            with contextlib.suppress(FileNotFoundError):
                note.unlink()
            continue
        for digest in images:
            found.setdefault(digest, []).append(store)
    return found


def _read(note: Path) -> tuple[str, list[str]]:
    """(the store, the digests of the images it stands on); ("", []) for no or a bad note."""
    try:
        data = json.loads(note.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return "", []
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        return "", []
    return str(data.get("store", "")), [str(digest) for digest in data["images"]]
