"""Pulling an image from its registry into the machine's image cache.

The manifest is read first (`skopeo inspect --raw`): a manifest list is narrowed
to this machine's platform (or `--platform`'s), and the image is then copied by
the digest of its own manifest, so a tag that moves during the pull cannot mix
two images. The copy goes into an OCI layout whose blobs live in the cache's
one blob folder (`IMAGES/blobs`, content-addressed): a layer that another image
already brought, as every SWE-bench image of a repository shares its base, is
not fetched again. A broken transfer is retried by skopeo; what failed leaves
the cache as it was, but for whole blobs it verified, which the next pull
reuses. The image is then unpacked as `sprout image import` unpacks one, every
layer's digest checked again (bottom layers another pulled image shares come
hard-linked from their chain, `sprout.images.chains`), and named by its
reference; its source records the registry, the digest pulled, its layers and
the image's config.
"""

from __future__ import annotations

import errno
import hashlib
import json
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sprout.images.blobs import blob_dir, blob_path
from sprout.images.cache import ImageCache, ImageError
from sprout.images.chains import chain_id, link_chain, shared_prefix
from sprout.images.oci import Archive, blob_name, read_manifest, unpack_layer
from sprout.images.platforms import Platform, choose, is_list, this_machine
from sprout.images.pull_progress import PullProgress, Transfer
from sprout.images.reference import ImageReference, parse_reference
from sprout.images.skopeo import copy_arguments, inspect_raw, registry_error, skopeo_command
from sprout.sandbox import Image

POLL_S = 0.1
"""How often a pull's progress is measured (the blobs on disk, whole and partial)."""
LAYOUT_TAG = "image"


@dataclass(frozen=True)
class Resolved:
    """The image a reference names for one platform, by digest."""

    reference: ImageReference
    digest: str
    """Its own manifest's digest: what a rerun elsewhere pulls to get the same bytes."""
    list_digest: str | None
    """The manifest list's, when the reference named one."""
    manifest: dict[str, Any]
    platform: Platform


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _manifest(raw: bytes, digest: str | None, reference: ImageReference) -> dict[str, Any]:
    """The manifest in `raw`, checked against the digest it was asked by."""
    if digest is not None and _sha256(raw) != digest:
        raise ImageError(
            f"image {reference.name}: {reference.registry} served a manifest that is not "
            f"{digest} (it is {_sha256(raw)})"
        )
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        raise ImageError(f"image {reference.name}: the manifest is not JSON") from None
    if not isinstance(parsed, dict):
        raise ImageError(f"image {reference.name}: the manifest is not a JSON object")
    return parsed


def resolve(reference: ImageReference, platform: Platform) -> Resolved:
    """The digest and manifest of `reference`'s image for `platform`, from its registry."""
    name, registry = reference.name, reference.registry
    raw = inspect_raw(reference.transport, name, registry)
    top = _manifest(raw, reference.digest, reference)
    if not is_list(top):
        return Resolved(reference, _sha256(raw), None, top, platform)
    digest = choose(top, platform, name)
    manifest = _manifest(inspect_raw(reference.at(digest), name, registry), digest, reference)
    return Resolved(reference, digest, _sha256(raw), manifest, platform)


def pull(
    text: str,
    *,
    cache: ImageCache | None = None,
    platform: str | None = None,
    progress: PullProgress | None = None,
) -> Image:
    """Image `text` (a reference as Docker writes it), pulled unless the cache holds its
    digest for this platform. ImageError, one line, when it cannot be; `RegistryUnreachable`
    when no registry answered."""
    reference = parse_reference(text)
    cache = cache or ImageCache()
    resolved = resolve(reference, Platform.parse(platform) if platform else this_machine())
    source = {
        "kind": "registry",
        "reference": reference.name,
        "registry": reference.registry,
        "repository": reference.repository,
        "digest": resolved.digest,
        **({"list_digest": resolved.list_digest} if resolved.list_digest else {}),
        "platform": str(resolved.platform),
    }
    identity = "reg-" + resolved.digest.partition(":")[2][:16]
    fill = _filler(resolved, cache, progress or PullProgress())
    return cache.ensure(reference.name, identity, source, fill)


def _filler(
    resolved: Resolved, cache: ImageCache, progress: PullProgress
) -> Callable[[Path], dict[str, Any]]:
    def fill(root: Path) -> dict[str, Any]:
        pulls = cache.root / "pulls"  # beside the blobs: skopeo renames each blob into place
        pulls.mkdir(parents=True, exist_ok=True)
        layout = pulls / secrets.token_hex(6)
        archive = Archive(layout, blobs=blob_dir(cache))
        layers = _LayersInOrder(archive, resolved, root, cache)
        try:
            fetched = _download(resolved, layout, blob_dir(cache), progress, layers.advance)
            layers.advance(finished=True)
            manifest = read_manifest(archive, LAYOUT_TAG)
            if manifest.layers != layers.names:
                raise ImageError(
                    f"image {resolved.reference.name}: the copied manifest lists other "
                    "layers than the registry's"
                )
            _check_platform(resolved, manifest.config)
        except OSError as error:
            if error.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            raise disk_full(resolved.reference.name, error) from None
        finally:
            shutil.rmtree(layout, ignore_errors=True)
        config = resolved.manifest.get("config") or {}
        blobs = [
            *(d for d, _ in _layers(resolved.manifest)),
            str(config.get("digest", "")),
            manifest.digest,  # the manifest as the layout holds it (skopeo may convert it)
        ]
        return {
            "config": manifest.config,
            "fetched_bytes": fetched,
            "blobs": blobs,
            "layers": [d for d, _ in _layers(resolved.manifest)],
            **({"chain": chain_id(layers.prefix)} if layers.prefix else {}),
        }

    return fill


class _LayersInOrder:
    """Unpacks an image's layers onto its root filesystem in order, each as soon as its
    blob is whole, while skopeo still fetches the ones above it. Bottom layers another
    pulled image shares come linked from their chain instead (`sprout.images.chains`). A
    blob this pull fetched was verified by skopeo before it was renamed into place; one
    the blob cache already held is checked again as it is unpacked."""

    def __init__(self, archive: Archive, resolved: Resolved, root: Path, cache: ImageCache) -> None:
        assert archive.blobs is not None, "a pull's layout keeps its blobs in the blob cache"
        self.archive, self.root, self.blobs, self.cache = archive, root, archive.blobs, cache
        digests = [digest for digest, _ in _layers(resolved.manifest)]
        self.names = [blob_name(d) for d in digests]
        cached = {n for n, d in zip(self.names, digests, strict=True) if self._whole(d)}
        self.fetched = set(self.names) - cached
        self.prefix = shared_prefix(cache, digests, self.blobs)
        self.done = -1  # the chain's layers first, when there is one

    def _whole(self, digest: str) -> bool:
        return blob_path(self.blobs, digest).is_file()

    def advance(self, finished: bool = False) -> None:
        """Unpack every next layer whose blob is whole; with `finished`, all of them."""
        if self.done < 0:
            if self.prefix:
                link_chain(self.cache, self.prefix, self.archive, self.root, self.fetched)
            self.done = len(self.prefix)
        while self.done < len(self.names):
            name = self.names[self.done]
            if not (self.blobs / name.removeprefix("blobs/")).is_file():
                if finished:
                    raise ImageError(f"{self.archive.path}: skopeo left no {name}")
                return
            unpack_layer(
                self.archive,
                name,
                self.root,
                verified=name in self.fetched,
                private_links=bool(self.prefix),
            )
            self.done += 1


def _check_platform(resolved: Resolved, config: dict[str, Any]) -> None:
    """A single-platform image built for another machine is refused, as a list without
    this platform is (`platforms.choose`)."""
    built = Platform(config.get("os") or "linux", config.get("architecture") or "")
    if (
        resolved.list_digest is None
        and built.architecture
        and not resolved.platform.matches({"os": built.os, "architecture": built.architecture})
    ):
        raise ImageError(
            f"image {resolved.reference.name}: no image for {resolved.platform} (it is "
            f"{built}); --platform picks another"
        )


def _layers(manifest: dict[str, Any]) -> list[tuple[str, int]]:
    return [
        (str(layer.get("digest", "")), int(layer.get("size") or 0))
        for layer in manifest.get("layers") or []
        if isinstance(layer, dict)
    ]


def _download(
    resolved: Resolved,
    layout: Path,
    blobs: Path,
    progress: PullProgress,
    tick: Callable[[], None],
) -> int:
    """Copy the image's blobs into `blobs` and its manifest into `layout`, calling `tick`
    as it goes; the bytes fetched (its layers that `blobs` lacked)."""
    layers = _layers(resolved.manifest)
    missing = [(d, size) for d, size in layers if not blob_path(blobs, d).is_file()]
    name = resolved.reference.name
    transfer = Transfer(name, sum(size for _, size in missing), len(layers))
    transfer.done_layers = len(layers) - len(missing)
    progress.start(transfer)
    started = time.monotonic()
    command = skopeo_command(
        copy_arguments(resolved.reference.at(resolved.digest), layout, LAYOUT_TAG, blobs)
    )
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        try:
            while not _exited(child):
                progress.update(name, *_measure(layout, blobs, layers, missing))
                tick()
        except BaseException:
            child.kill()
            child.wait()
            progress.finish(name)
            raise
        if child.returncode != 0:
            errors.seek(0)
            error = registry_error(
                errors.read().decode(errors="replace"), name, resolved.reference.registry
            )
            progress.finish(name)
            raise error
    fetched = sum(size for _, size in missing)
    shared = len(layers) - len(missing)
    seconds = time.monotonic() - started
    progress.finish(name, pulled_line(name, resolved.digest, len(layers), fetched, shared, seconds))
    return fetched


def pulled_line(
    name: str, digest: str, layers: int, fetched: int, shared: int, seconds: float
) -> str:
    """The line a finished pull leaves (docs/tasks.md quotes it): its digest's head, and
    what came over the network against what the blob cache had."""
    return (
        f"{name}: pulled {digest[:19]} ({layers} layers, {fetched / 1e6:.1f} MB fetched"
        + (f", {shared} already in the blob cache" if shared else "")
        + f", {seconds:.1f} s)"
    )


def disk_full(name: str, error: OSError) -> ImageError:
    """The one line for a pull the disk could not hold: the pull's folder goes with it."""
    return ImageError(
        f"image {name}: the disk is full ({error.strerror}); nothing half-pulled was kept"
    )


def _exited(child: subprocess.Popen[bytes]) -> bool:
    """Whether `child` ended within POLL_S: the wait, not a sleep, so that the pull goes on
    the moment skopeo is done."""
    try:
        child.wait(timeout=POLL_S)
    except subprocess.TimeoutExpired:
        return False
    return True


def _measure(
    layout: Path, blobs: Path, layers: list[tuple[str, int]], missing: list[tuple[str, int]]
) -> tuple[int, int]:
    """(bytes of the missing layers on disk now, layers whole): skopeo writes each blob to
    a temporary file in the layout, then renames it into the blob folder."""
    whole = [size for digest, size in missing if blob_path(blobs, digest).is_file()]
    partial = 0
    if layout.is_dir():
        for entry in layout.glob("oci-put-blob*"):
            try:
                partial += entry.stat().st_size
            except FileNotFoundError:
                continue
    done_layers = len(layers) - len(missing) + len(whole)
    return sum(whole) + partial, done_layers
