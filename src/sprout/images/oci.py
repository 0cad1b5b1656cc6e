"""Importing images: an OCI image layout (a folder or its tar) or a `docker save` tarball.

How a user with Docker brings a task's prebuilt image: `docker save IMAGE -o
image.tar`, then `sprout image import image.tar`. The layers are applied in
order onto one root filesystem, with their whiteouts: `.wh.NAME` deletes NAME
from the layers below, `.wh..wh..opq` empties the folder it sits in. Entries
are checked with tarfile's "tar" filter, which refuses paths and links that
would land outside the root filesystem, and keep their modes and owners;
whiteouts are resolved the same way, so no layer reaches this machine's files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, cast

import zstandard

from sprout.images.cache import ImageCache, ImageError
from sprout.images.platforms import choose, is_list, this_machine
from sprout.sandbox import Image

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
STREAM_BUFFER = 1 << 20
"""Bytes a layer is read and its files written in: tarfile's 10 KB default makes a third
of the time of unpacking a layer of big files Python's own bookkeeping."""


@dataclass(frozen=True)
class Archive:
    """An image's files, from a folder or a tar of one; `blobs`: the shared blob folder an
    OCI layout's blobs may be in instead (`skopeo copy --dest-shared-blob-dir`)."""

    path: Path
    blobs: Path | None = None

    def read(self, name: str) -> bytes:
        with self.open(name) as handle:
            return handle.read()

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        """Member `name`, streamed (a layer may be bigger than memory)."""
        if self.blobs is not None and name.startswith("blobs/"):
            shared = self.blobs / name.removeprefix("blobs/")
            if shared.is_file():
                with shared.open("rb") as handle:
                    yield handle
                return
        if self.path.is_dir():
            target = self.path / name
            if not target.is_file():
                raise ImageError(f"{self.path}: no {name}")
            with target.open("rb") as handle:
                yield handle
            return
        with tarfile.open(self.path) as archive:
            bare = name.removeprefix("./")
            for candidate in (bare, f"./{bare}"):
                with contextlib.suppress(KeyError):
                    member = archive.extractfile(candidate)
                    if member is not None:
                        yield member
                        return
            raise ImageError(f"{self.path}: no {name}")


@dataclass(frozen=True)
class ImageManifest:
    """What an archive says of one image."""

    layers: list[str]
    """Layer paths inside the archive, bottom first."""
    name: str
    """Its own reference ("" when it has none)."""
    digest: str
    config: dict[str, Any]
    """What `docker run` starts it with (`config_summary`)."""


def _json(archive: Archive, name: str) -> Any:
    try:
        return json.loads(archive.read(name))
    except json.JSONDecodeError as error:
        raise ImageError(f"{archive.path}: {name}: not JSON ({error})") from None


def blob_name(digest: str) -> str:
    """Blob `digest`'s name in an OCI layout (`blobs/sha256/HEX`)."""
    algorithm, _, value = digest.partition(":")
    return f"blobs/{algorithm}/{value}"


def config_summary(config: dict[str, Any]) -> dict[str, Any]:
    """The parts of an image's config a sandbox starts with, as `docker run` does: its
    variables, working folder and user, and the platform it was built for."""
    run = config.get("config") or {}
    return {
        "env": [e for e in run.get("Env") or [] if isinstance(e, str)],
        "workdir": run.get("WorkingDir") or "",
        "user": run.get("User") or "",
        "os": config.get("os") or "",
        "architecture": config.get("architecture") or "",
    }


def read_manifest(archive: Archive, reference: str | None) -> ImageManifest:
    """The image of `archive` that `reference` names (its only or first one without)."""
    names = _names(archive)
    if "index.json" in names:
        index = _json(archive, "index.json")
        manifests = index.get("manifests") or []
        if reference is not None:
            manifests = [
                m
                for m in manifests
                if (m.get("annotations") or {}).get("org.opencontainers.image.ref.name")
                == reference
            ] or manifests
        if not manifests:
            raise ImageError(f"{archive.path}: index.json lists no image")
        manifest_ref = manifests[0]
        manifest = _json(archive, blob_name(manifest_ref["digest"]))
        if is_list(manifest):
            chosen = choose(manifest, this_machine(), str(archive.path))
            manifest = _json(archive, blob_name(chosen))
        config = manifest.get("config") or {}
        name = (manifest_ref.get("annotations") or {}).get(
            "org.opencontainers.image.ref.name", reference or ""
        )
        return ImageManifest(
            [blob_name(layer["digest"]) for layer in manifest.get("layers") or []],
            name,
            manifest_ref["digest"],
            config_summary(_json(archive, blob_name(config["digest"]))) if config else {},
        )
    if "manifest.json" in names:
        entries = _json(archive, "manifest.json")
        if not isinstance(entries, list) or not entries:
            raise ImageError(f"{archive.path}: manifest.json lists no image")
        entry = entries[0]
        if reference is not None:
            entry = next((e for e in entries if reference in (e.get("RepoTags") or [])), entry)
        tags = entry.get("RepoTags") or []
        digest = "sha256:" + hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()
        config_file = entry.get("Config")
        return ImageManifest(
            list(entry.get("Layers") or []),
            tags[0] if tags else "",
            digest,
            config_summary(_json(archive, config_file)) if config_file else {},
        )
    raise ImageError(
        f"{archive.path}: neither an OCI image layout (index.json) nor a docker save tarball "
        "(manifest.json)"
    )


def _names(archive: Archive) -> set[str]:
    if archive.path.is_dir():
        return {entry.name for entry in archive.path.iterdir()}
    if not tarfile.is_tarfile(archive.path):
        raise ImageError(f"{archive.path}: not a folder or a tar file")
    with tarfile.open(archive.path) as tar:
        return {name.removeprefix("./") for name in tar.getnames()}


def _check_digest(archive: Archive, name: str) -> None:
    """A blob's bytes against the digest it is named by: a cached blob is reused without
    being fetched again, so it is checked whenever it is unpacked."""
    parts = PurePosixPath(name).parts
    if len(parts) != 3 or parts[:2] != ("blobs", "sha256"):
        return  # a docker save tarball names its layers by path
    digest = hashlib.sha256()
    with archive.open(name) as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != parts[2]:
        raise ImageError(
            f"{archive.path}: layer {name} does not match its digest (sha256:{digest.hexdigest()})"
        )


@contextlib.contextmanager
def _opened_layer(archive: Archive, name: str, verified: bool) -> Iterator[tarfile.TarFile]:
    if not verified:
        _check_digest(archive, name)
    with archive.open(name) as handle, _decompressed(handle) as stream:
        try:
            with tarfile.open(fileobj=stream, mode="r|*", bufsize=STREAM_BUFFER) as layer:
                layer.copybufsize = STREAM_BUFFER  # type: ignore[attr-defined]  # (not in typeshed)
                yield layer
        except (tarfile.ReadError, zstandard.ZstdError, EOFError) as error:
            raise ImageError(
                f"{archive.path}: layer {name} is not a readable tar ({error})"
            ) from None


@contextlib.contextmanager
def _decompressed(handle: IO[bytes]) -> Iterator[IO[bytes]]:
    """A layer's tar as a stream: zstd (`tar+zstd`, and zstd:chunked, whose extra frames
    are skippable) here; gzip, bzip2, xz and none by tarfile's own detection."""
    magic = handle.read(4)
    handle.seek(0)
    if magic != ZSTD_MAGIC:
        yield handle
        return
    with zstandard.ZstdDecompressor().stream_reader(handle, read_across_frames=True) as stream:
        yield cast(IO[bytes], stream)


def _contained(member: tarfile.TarInfo, destination: str) -> tarfile.TarInfo | None:
    """tarfile's "tar" filter for where an entry and its link land, keeping its mode as the
    image has it (the filter would drop setuid bits and the sticky bit of /tmp). Device
    nodes are left out: a sandbox gets its own /dev, and none belongs on this machine's disk."""
    if member.ischr() or member.isblk():
        return None
    return tarfile.tar_filter(member, destination).replace(mode=member.mode, deep=False)


def _inside(root: Path, member: str, *, follow: bool = False) -> Path:
    """Where `member` lands under `root`, its folders' links resolved: ImageError when that is
    outside `root` (a layer's link `etc -> /` must not lead a later whiteout to the host).
    The last component is followed only with `follow` (an opaque folder)."""
    parts = PurePosixPath(member).parts
    if not parts or parts[0] == "/" or ".." in parts:
        raise ImageError(f"layer entry {member!r} would land outside the root filesystem")
    top = Path(os.path.realpath(root))
    if follow:
        landed = Path(os.path.realpath(top.joinpath(*parts)))
    else:
        landed = Path(os.path.realpath(top.joinpath(*parts[:-1]))) / parts[-1]
    if landed != top and top not in landed.parents:
        raise ImageError(f"layer entry {member!r} would land outside the root filesystem")
    return landed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.is_symlink() or path.exists():
        path.unlink()


def apply_layer(layer: tarfile.TarFile, root: Path, *, private_links: bool = False) -> None:
    """Apply one layer onto `root` in one pass over its entries, so that a layer is read
    once, as a stream. Whiteouts hide only what the layers below left (OCI's rule): what
    this layer itself wrote, before or after its whiteout, stays. `private_links`: `root`
    shares files with other root filesystems (`sprout.images.chains`), so a hard link
    to one of them is made to a copy of its own (tarfile sets the link's mode and owner
    on the file it links)."""
    own: set[PurePosixPath] = set()
    """What this layer wrote, with every folder above it."""
    for member in layer:
        path = PurePosixPath(member.name.removeprefix("./"))
        if path.name == OPAQUE:
            folder = _inside(root, str(path.parent), follow=True) if path.parent.parts else root
            if folder.is_dir() and not folder.is_symlink():
                for child in folder.iterdir():
                    if path.parent / child.name not in own:
                        _remove(child)
        elif path.name.startswith(WHITEOUT):
            hidden = path.parent / path.name[len(WHITEOUT) :]
            if hidden not in own:
                _remove(_inside(root, str(hidden)))
        elif path.parts:  # not the root folder itself, which the cache makes
            _extract(layer, member, root, private_links)
            own.update((path, *path.parents))


def _extract(
    layer: tarfile.TarFile, member: tarfile.TarInfo, root: Path, private_links: bool
) -> None:
    target = _inside(root, member.name.removeprefix("./"))
    if member.islnk():  # a hard link's target too, links resolved (tarfile's filter does
        # not resolve them everywhere)
        source = _inside(root, member.linkname.removeprefix("./"), follow=True)
        if not source.is_file():
            raise ImageError(f"layer entry {member.name!r}: hard link to a missing file")
        if private_links and source.stat().st_nlink > 1:
            _own_copy(source)
    replaced = target.is_symlink() or target.exists()
    if replaced and not (member.isdir() and target.is_dir() and not target.is_symlink()):
        _remove(target)  # a later layer replaces the file (a folder stays, and is updated)
    layer.extract(member, root, filter=_contained, numeric_owner=True)


def _own_copy(path: Path) -> None:
    """Put a copy of file `path` in its place, with its mode, owner and times: a file of
    its own, which no other root filesystem shares."""
    stat = path.stat()
    copy = path.with_name(f".{path.name}.sprout-copy")
    shutil.copy2(path, copy)
    if os.geteuid() == 0:
        os.chown(copy, stat.st_uid, stat.st_gid)
        os.chmod(copy, stat.st_mode)  # chown drops setuid bits
    os.replace(copy, path)


def import_image(
    path: str | os.PathLike[str],
    name: str | None = None,
    *,
    reference: str | None = None,
    cache: ImageCache | None = None,
) -> Image:
    """Import the image of `path` (an OCI layout folder or tar, or a `docker save` tarball)
    into the cache under `name` (default: the image's own tag)."""
    archive = Archive(Path(path))
    if not archive.path.exists():
        raise ImageError(f"{archive.path}: no such file or folder")
    manifest = read_manifest(archive, reference)
    name = name or manifest.name
    if not name:
        raise ImageError(f"{archive.path}: the image has no tag; give it a name (--name)")
    source = {
        "kind": "oci",
        "file": str(archive.path.resolve()),
        "reference": manifest.name,
        "config": manifest.config,
    }
    identity = "oci-" + manifest.digest.partition(":")[2][:16]
    return (cache or ImageCache()).ensure(name, identity, source, unpacker(archive, manifest))


def unpacker(archive: Archive, manifest: ImageManifest) -> Callable[[Path], None]:
    """What fills a root filesystem with `manifest`'s layers, in order."""

    def fill(root: Path) -> None:
        for layer_name in manifest.layers:
            unpack_layer(archive, layer_name, root)

    return fill


def unpack_layer(
    archive: Archive,
    name: str,
    root: Path,
    *,
    verified: bool = False,
    private_links: bool = False,
) -> None:
    """Apply layer `name` of `archive` onto `root`; its digest is checked first unless the
    caller just saw it `verified` (skopeo checks every blob it fetches). `private_links`:
    see `apply_layer`."""
    with _opened_layer(archive, name, verified) as layer:
        try:
            apply_layer(layer, root, private_links=private_links)
        except tarfile.FilterError as error:
            raise ImageError(f"{archive.path}: layer {name}: {error}") from None
