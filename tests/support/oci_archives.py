"""Image archives made in memory: layers as tar streams, and the `docker save` tarballs and
OCI layout folders that `sprout image import` reads, for the import and store tests."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

Entry = tuple[str, str | bytes | None, dict[str, object]]
"""(name, content: bytes a file, str a symlink's target, None a folder, options for TarInfo)."""


def layer(entries: list[Entry], *, compress: bool = False) -> bytes:
    """One layer: a tar of `entries`, gzipped when `compress`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content, options in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 1_700_000_000
            if content is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif isinstance(content, str):
                info.type, info.linkname = tarfile.SYMTYPE, content
            else:
                info.size, info.mode = len(content), 0o644
            for key, value in options.items():
                setattr(info, key, value)
            tar.addfile(info, io.BytesIO(content) if isinstance(content, bytes) else None)
    data = buffer.getvalue()
    return gzip.compress(data, compresslevel=1, mtime=0) if compress else data


def rootfs_layer(root: Path) -> bytes:
    """The minimal root filesystem of the tests, as an image's bottom layer."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(root, arcname=".")
    return buffer.getvalue()


def docker_save(
    path: Path, layers: list[bytes], tag: str = "acme/tool:1", config: dict[str, Any] | None = None
) -> Path:
    """A `docker save` tarball of `layers`, bottom first, with the image config `config`."""
    files = {f"{i}/layer.tar": data for i, data in enumerate(layers)}
    manifest = [{"Config": "config.json", "RepoTags": [tag], "Layers": list(files)}]
    files["manifest.json"] = json.dumps(manifest).encode()
    files["config.json"] = json.dumps(config or {}).encode()
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def oci_layout(folder: Path, layers: list[bytes], ref: str = "acme/tool:1") -> Path:
    """An OCI image layout folder of `layers`, bottom first."""
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def blob(data: bytes) -> dict[str, object]:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return {"digest": f"sha256:{digest}", "size": len(data)}

    config = blob(b"{}")
    manifest = {
        "schemaVersion": 2,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
        "layers": [
            {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **blob(data)}
            for data in layers
        ],
    }
    described = blob(json.dumps(manifest).encode())
    index = {
        "schemaVersion": 2,
        "manifests": [
            {**described, "annotations": {"org.opencontainers.image.ref.name": ref}},
        ],
    }
    (folder / "index.json").write_text(json.dumps(index))
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    return folder
