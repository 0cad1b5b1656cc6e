"""The machine-wide image cache: filling it with root filesystems, naming them, removing them.

Its layout, and reading it, belong to the sandbox (`sprout.sandbox.ImageCatalog`), which
finds an image by name when `Sandbox.create(store, image=NAME)` asks for one; this module
is the writing side. An image is built into a temporary folder and renamed into place
when it is whole: a build that dies leaves nothing a run could mount.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sprout.durable import file_lock, write_atomically
from sprout.errors import SproutError
from sprout.sandbox import NAMES, Image, ImageCatalog, disk_usage, place_store

Fill = Callable[[Path], "dict[str, Any] | None"]
"""What fills a new image's root filesystem, and may add to what its source records."""


class ImageError(SproutError, ValueError):
    """An image that cannot be built, imported or found; the message names it."""


class ImageCache(ImageCatalog):
    """Images of this machine, shared by every run (`root` defaults to the cache's): the
    catalogue, and the verbs that change it."""

    def _make(self) -> None:
        """Make the cache's folder when it is missing: on sprout's store filesystem where
        a new layer store would be (see the module's docstring)."""
        place_store(self.root)
        self.root.mkdir(parents=True, exist_ok=True)

    def name(self, name: str, digest: str) -> None:
        """Point `name` at image `digest`."""
        self._make()
        (self.root / NAMES).mkdir(exist_ok=True)
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
