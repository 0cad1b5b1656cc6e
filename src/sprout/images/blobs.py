"""The machine's one blob cache of pulled images, content-addressed as an OCI layout's
blobs are (`IMAGES/blobs/sha256/HEX`): skopeo copies every pull's blobs into it, so a
layer two images share is fetched and stored once."""

from __future__ import annotations

from pathlib import Path

from sprout.images.cache import ImageCache


def blob_dir(cache: ImageCache) -> Path:
    return cache.root / "blobs"


def blob_path(blobs: Path, digest: str) -> Path:
    """Where blob `digest` (`sha256:HEX`) is in the blob folder `blobs`."""
    algorithm, _, value = digest.partition(":")
    return blobs / algorithm / value
