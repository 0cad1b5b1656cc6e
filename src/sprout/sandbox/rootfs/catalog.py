"""The machine's image cache as a sandbox reads it: a root filesystem by the name
`sprout image list` shows.

Layout under `SPROUT_CACHE/images` (default ~/.cache/sprout/images):

    DIGEST/rootfs/      the root filesystem (host ids: sandboxes see it through an idmapped mount)
    DIGEST/image.json   what it is: where it came from, when, how big
    names/NAME          the digest a name points at (NAME quoted: "python%3A3.11-slim")
    DIGEST.lock         held while DIGEST is built, so concurrent runs build it once
    stores/             which layer stores stand on which images (`rootfs.notes`)

`sprout.images` fills the cache (pulls, Debian builds, imports) and collects it; this
module only reads it, so that `Sandbox.create(store, image=NAME)` finds what the command
line made without importing anything that makes images.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sprout.durable import cache_dir
from sprout.sandbox.errors import BadArgument

NAMES = "names"
STORES = "stores"
"""The folder of notes on layer stores that stand on images (`rootfs.notes`)."""


def config_env(config: Mapping[str, Any]) -> dict[str, str]:
    """An image config's (`oci.config_summary`) `NAME=value` entries as a mapping."""
    pairs = (str(entry).partition("=") for entry in config.get("env") or [])
    return {name: value for name, _, value in pairs if name}


@dataclass(frozen=True)
class Image:
    """A root filesystem in the cache."""

    digest: str
    """Its id: the cache's folder, what `sprout image list` shows last."""
    rootfs: str
    names: tuple[str, ...]
    source: dict[str, Any]
    """How it was made: {"kind": "debian", "suite": ..., "packages": [...]},
    {"kind": "registry", "digest": ..., "config": ...} or {"kind": "oci", "file": ...}."""
    created: float
    size: int

    @property
    def env(self) -> dict[str, str]:
        """The image's ENV, as `docker run` starts a container with it."""
        return config_env(self.source.get("config") or {})


class ImageCatalog:
    """The images of this machine's cache, read-only (`root` defaults to the cache's)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else cache_dir() / "images"

    def _name_file(self, name: str) -> Path:
        return self.root / NAMES / urllib.parse.quote(name, safe="")

    def get(self, name: str) -> Image | None:
        """The image `name` points at, or None."""
        try:
            digest = self._name_file(name).read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return None
        return self._read(digest)

    def find(self, text: str) -> Image | None:
        """The image `text` names as `sprout image list` shows images: a name, a name with
        the registry digest it was pulled at (`NAME@sha256:...`), or the image's id."""
        found = self.get(text)
        name, at, digest = text.rpartition("@")
        if found is None and at:
            named = self.get(name)
            pulled = named.source if named is not None else {}
            if digest in (pulled.get("digest"), pulled.get("list_digest")):
                found = named
        if found is None and _is_id(text):
            found = self._read(text)
        return found

    def _read(self, digest: str) -> Image | None:
        try:
            data = json.loads((self.root / digest / "image.json").read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError, ValueError):
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
        folder = self.root / NAMES
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
            if entry.is_dir() and _is_id(entry.name)
            if (image := self._read(entry.name)) is not None
        ]
        return sorted(found, key=lambda image: image.created, reverse=True)


def _is_id(text: str) -> bool:
    """Whether `text` can be an image's folder: not the cache's own folders, not a build in
    progress (`DIGEST.RANDOM.tmp`), nothing that leaves the cache."""
    return bool(text) and text not in (NAMES, STORES) and "." not in text and "/" not in text


def cached_image(image: object, catalog: ImageCatalog | None = None) -> Image | None:
    """The image of the machine's cache that a sandbox's `image` names, when it names
    neither `host` nor a folder (None then: the config check reads those). BadArgument, one
    line saying how to get it, when the cache holds none by that name: nothing is pulled
    or built behind the caller's back."""
    if not isinstance(image, str) or image in ("", "host") or os.path.isdir(image):
        return None
    if image.startswith(("/", "./", "../")):
        return None
    catalog = catalog or ImageCatalog()
    found = catalog.find(image)
    if found is None:
        raise BadArgument(
            "image",
            f"{image} is no folder and no image of the machine's image cache ({catalog.root}); "
            f"get it with `sprout image pull {image}` (from its registry) or `sprout image "
            f"build {image}` (from Debian's archive), or pick one of `sprout image list`",
        )
    return found
