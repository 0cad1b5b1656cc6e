"""Unpacked layers that pulled images share, stored once: every SWE-bench image of a
repository is its environment's layers under a few of its own.

    IMAGES/chains/CHAIN/rootfs      the layers of a prefix applied, bottom first
    IMAGES/chains/CHAIN/chain.json  which layers (their digests), when it was made

A pull whose bottom layers another pulled image also starts with unpacks that prefix
once into a chain (itself made from the longest chain below it), then hard-links the
chain into its own root filesystem and applies only the layers above it. The next image
on the same prefix links the chain without unpacking it. Only files are shared, never
folders: a layer above replaces a file by unlinking it first, and a hard link in it to a
shared file is made to a private copy (`oci.apply_layer(private_links=True)`), so no
image's layers change another's files. Sandboxes only ever read a root filesystem.
`sprout gc --images` removes the chains no remaining image starts with.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from sprout.durable import file_lock
from sprout.images.blobs import blob_path
from sprout.images.cache import ImageCache, ImageError
from sprout.images.oci import Archive, blob_name, unpack_layer

CHAINS = "chains"


def chain_dir(cache: ImageCache) -> Path:
    return cache.root / CHAINS


def chain_id(layers: Sequence[str]) -> str:
    """The name of the chain of `layers` (digests, bottom first)."""
    return hashlib.sha256("\n".join(layers).encode()).hexdigest()[:32]


def pulled_layers(cache: ImageCache, leaving_out: set[str] | None = None) -> list[list[str]]:
    """The layer digests of each pulled image of the cache (imports record none), but for
    the images `leaving_out` names by digest."""
    return [
        list(image.source["layers"])
        for image in cache.images()
        if image.source.get("layers") and image.digest not in (leaving_out or set())
    ]


def shared_prefix(cache: ImageCache, layers: Sequence[str], blobs: Path) -> list[str]:
    """The longest prefix of `layers` that a chain holds, or that another pulled image
    starts with and whose blobs the cache still has (then worth a chain); [] for none."""
    best = 0
    for other in pulled_layers(cache):
        common = 0
        while common < min(len(other), len(layers)) and other[common] == layers[common]:
            common += 1
        if common > best and all(blob_path(blobs, d).is_file() for d in layers[:common]):
            best = common
    for length in range(len(layers), best, -1):
        if _rootfs(cache, layers[:length]).is_dir():
            return list(layers[:length])
    return list(layers[:best])


def link_chain(
    cache: ImageCache, layers: Sequence[str], archive: Archive, root: Path, verified: set[str]
) -> None:
    """Fill `root` with the chain of `layers`, made first when missing; `verified`: the
    blob names (`blobs/sha256/...`) this pull's skopeo just checked."""
    _link(ensure_chain(cache, layers, archive, verified), root)


def ensure_chain(
    cache: ImageCache, layers: Sequence[str], archive: Archive, verified: set[str]
) -> Path:
    """The root filesystem of the chain of `layers`: made once, by whoever comes first."""
    found = _rootfs(cache, layers)
    if found.is_dir():
        return found
    chain_dir(cache).mkdir(parents=True, exist_ok=True)
    with file_lock(chain_dir(cache) / f"{chain_id(layers)}.lock"):
        if found.is_dir():
            return found
        below = next(
            (n for n in range(len(layers) - 1, 0, -1) if _rootfs(cache, layers[:n]).is_dir()), 0
        )
        staging = chain_dir(cache) / f"{chain_id(layers)}.{secrets.token_hex(4)}.tmp"
        rootfs = staging / "rootfs"
        rootfs.mkdir(parents=True)
        try:
            if below:
                _link(_rootfs(cache, layers[:below]), rootfs)
            for digest in layers[below:]:
                name = blob_name(digest)
                unpack_layer(
                    archive, name, rootfs, verified=name in verified, private_links=bool(below)
                )
            meta = {"layers": list(layers), "created": time.time()}
            (staging / "chain.json").write_text(json.dumps(meta), encoding="utf-8")
            staging.rename(found.parent)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return found


def _link(chain: Path, root: Path) -> None:
    """Hard-link every file of `chain` into the empty `root`, folders made anew (modes,
    owners and times kept): GNU cp does this in one pass."""
    done = subprocess.run(
        ["cp", "-a", "--link", f"{chain}/.", str(root)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise ImageError(f"{chain}: not linked into {root}: {done.stderr.strip()}")


def collect_chains(
    cache: ImageCache, gone: set[str], grace_s: float, dry_run: bool
) -> tuple[int, int]:
    """Remove (dry: count) the chains that no pulled image left in the cache starts with,
    but for those younger than `grace_s` (a pull under way may be linking one); `gone`:
    image digests a dry run counts as removed. How many went, and the bytes of their files
    that no image linked."""
    kept = pulled_layers(cache, leaving_out=gone)
    removed = freed = 0
    folder = chain_dir(cache)
    for meta_file in sorted(folder.glob("*/chain.json")) if folder.is_dir() else []:
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        layers = list(meta.get("layers") or [])
        in_use = any(other[: len(layers)] == layers for other in kept)
        if in_use or float(meta.get("created", 0)) > time.time() - grace_s:
            continue
        freed += _unshared_bytes(meta_file.parent)
        if not dry_run:
            shutil.rmtree(meta_file.parent, ignore_errors=True)
        removed += 1
    return removed, freed


def _unshared_bytes(folder: Path) -> int:
    """What removing `folder` frees: its files no other folder links."""
    total = 0
    for path in folder.rglob("*"):
        stat = path.lstat()
        if not path.is_dir() and stat.st_nlink == 1:
            total += stat.st_blocks * 512
    return total


def _rootfs(cache: ImageCache, layers: Sequence[str]) -> Path:
    return chain_dir(cache) / chain_id(layers) / "rootfs"
