"""The machine-wide image cache: root filesystems by content, names that point at them.

Layout under `SPROUT_CACHE/images` (default ~/.cache/sprout/images):

    DIGEST/rootfs/      the root filesystem (host ids: sandboxes see it through an idmapped mount)
    DIGEST/image.json   what it is: its names, where it came from, when, how big
    names/NAME          the digest a name points at (NAME quoted: "python%3A3.11-slim")
    DIGEST.lock         held while DIGEST is built, so concurrent runs build it once
    stores/             which run stores stand on which images (`sprout.images.runstores`)

An image is built into a temporary folder and renamed into place when it is
whole: a build that dies leaves nothing a run could mount.

As root on a disk that cannot clone extents, a new cache's folder is a link into
sprout's store filesystem, like a new layer store (`sprout.sandbox.storefs.btrfs`): a
sandbox's first write to a big file of an image then clones the file's blocks into its
layer instead of copying them. A cache that exists stays where it is (`sprout doctor`
says how to move it).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sprout.durable import cache_dir, file_lock, write_atomically
from sprout.errors import SproutError
from sprout.sandbox import disk_usage, place_store

STORES = "stores"
"""The folder of notes on run stores that stand on images (`sprout.images.runstores`)."""


Fill = Callable[[Path], "dict[str, Any] | None"]
"""What fills a new image's root filesystem, and may add to what its source records."""


class ImageError(SproutError, ValueError):
    """An image that cannot be built, imported or found; the message names it."""


@dataclass(frozen=True)
class Image:
    """A root filesystem in the cache."""

    digest: str
    rootfs: str
    names: tuple[str, ...]
    source: dict[str, Any]
    """How it was made: {"kind": "debian", "suite": ..., "packages": [...]} or
    {"kind": "oci", "file": ..., "reference": ...}."""
    created: float
    size: int


class ImageCache:
    """Images of this machine, shared by every run (`root` defaults to the cache's)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else cache_dir() / "images"

    def _name_file(self, name: str) -> Path:
        return self.root / "names" / urllib.parse.quote(name, safe="")

    def get(self, name: str) -> Image | None:
        """The image `name` points at, or None."""
        try:
            digest = self._name_file(name).read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return None
        return self._read(digest)

    def _read(self, digest: str) -> Image | None:
        try:
            data = json.loads((self.root / digest / "image.json").read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        return Image(
            digest=digest,
            rootfs=str(self.root / digest / "rootfs"),
            names=tuple(self._names_of(digest)),
            source=dict(data.get("source") or {}),
            created=float(data.get("created", 0.0)),
            size=int(data.get("size", 0)),
        )

    def _names_of(self, digest: str) -> Iterator[str]:
        folder = self.root / "names"
        if not folder.is_dir():
            return
        for entry in sorted(folder.iterdir()):
            if not entry.name.endswith(".tmp") and entry.read_text().strip() == digest:
                yield urllib.parse.unquote(entry.name)

    def images(self) -> list[Image]:
        """Every complete image, newest first."""
        if not self.root.is_dir():
            return []
        found = [
            image
            for entry in self.root.iterdir()
            if entry.is_dir() and entry.name not in ("names", STORES) and "." not in entry.name
            if (image := self._read(entry.name)) is not None
        ]
        return sorted(found, key=lambda image: image.created, reverse=True)

    def _make(self) -> None:
        """Make the cache's folder when it is missing: on sprout's store filesystem where
        a new layer store would be (see the module's docstring)."""
        place_store(self.root)
        self.root.mkdir(parents=True, exist_ok=True)

    def name(self, name: str, digest: str) -> None:
        """Point `name` at image `digest`."""
        self._make()
        (self.root / "names").mkdir(exist_ok=True)
        write_atomically(str(self._name_file(name)), digest, durable=True)

    def ensure(self, name: str, digest: str, source: dict[str, Any], fill: Fill) -> Image:
        """Image `digest`, named `name`: made by `fill(rootfs)` unless the cache holds it;
        what `fill` returns joins `source` (a pull learns the image's config as it goes).

        Concurrent callers (threads or runs) wait for one build instead of repeating it.
        """
        self._make()
        with self._lock(digest):
            found = self._read(digest)
            if found is None:
                self._build(digest, source, fill)
            self.name(name, digest)
        image = self._read(digest)
        assert image is not None, "the image was just made"
        return image

    def _lock(self, digest: str) -> contextlib.AbstractContextManager[None]:
        return file_lock(self.root / f"{digest}.lock")

    def _build(self, digest: str, source: dict[str, Any], fill: Fill) -> None:
        staging = self.root / f"{digest}.{secrets.token_hex(4)}.tmp"
        rootfs = staging / "rootfs"
        rootfs.mkdir(parents=True)
        try:
            source = {**source, **(fill(rootfs) or {})}
            os.chmod(rootfs, 0o755)
            meta = {"source": source, "created": time.time(), "size": disk_usage(str(rootfs))}
            (staging / "image.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
            os.rename(staging, self.root / digest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def remove(self, name: str) -> bool:
        """Forget `name`; the image goes when no other name points at it. False: no such name."""
        image = self.get(name)
        if image is None:
            return False
        self._name_file(name).unlink()
        if not tuple(self._names_of(image.digest)):
            self.remove_image(image.digest)
        return True

    def remove_image(self, digest: str) -> None:
        """Delete image `digest` and every name that points at it."""
        with self._lock(digest):
            for name in self._names_of(digest):
                self._name_file(name).unlink()
            shutil.rmtree(self.root / digest, ignore_errors=True)
