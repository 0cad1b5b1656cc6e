"""A real registry on loopback for the pull tests: Debian's `docker-registry` (the CNCF
distribution registry) with TLS from a CA the test makes and htpasswd auth, in the test's
own folders, and images pushed into it by skopeo from OCI layouts the test writes."""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import struct
import subprocess
import tarfile
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import zstandard

USER, PASSWORD = "sprout", "s3cret-pw"
Files = dict[str, bytes]
"""A layer's files: path -> content."""
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar"


def needs_registry() -> None:
    for tool in ("skopeo", "docker-registry", "openssl"):
        if shutil.which(tool) is None and not Path("/usr/bin", tool).exists():
            pytest.skip(f"{tool} is missing (Debian packages skopeo, docker-registry, openssl)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _openssl(*arguments: str | Path) -> None:
    subprocess.run(["openssl", *map(str, arguments)], check=True, capture_output=True)


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """(the CA's certificate, the server's certificate and key for 127.0.0.1)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = folder / "ca.crt", folder / "ca.key"
    crt, key, csr = folder / "server.crt", folder / "server.key", folder / "server.csr"
    curve = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *curve, "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=t")
    _openssl("req", *curve, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    extensions = folder / "san.cnf"
    extensions.write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl(
        *("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial"),
        *("-out", crt, "-days", "2", "-extfile", extensions),
    )
    return ca, crt, key


def _bcrypt(password: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt

        return crypt.crypt(
            password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)
        )  # cost 4: fast checks


def layer_blob(files: Files, *, zstd: bool = False) -> tuple[bytes, str]:
    """(the gzipped tar of `files`, its uncompressed digest); with `zstd`, the tar as
    zstd:chunked writes it: frames of their own, then a skippable frame."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o755, 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    if not zstd:
        return gzip.compress(tar_bytes, compresslevel=1, mtime=0), _digest(tar_bytes)
    half = len(tar_bytes) // 2
    frames = [zstandard.compress(part) for part in (tar_bytes[:half], tar_bytes[half:])]
    skippable = struct.pack("<II", 0x184D2A50, 8) + b"manifest"
    return b"".join(frames) + skippable, _digest(tar_bytes)


def tree_blob(root: Path) -> tuple[bytes, str]:
    """A folder (a root filesystem) as a gzipped layer, compressed fast: gzip's default
    level takes 15 s on a Python root filesystem, its first level under a second."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        tar.add(root, arcname=".")
    return gzip.compress(raw.getvalue(), compresslevel=1, mtime=0), _digest(raw.getvalue())


def _compression(layer: bytes) -> str:
    return "+zstd" if layer.startswith(b"\x28\xb5\x2f\xfd") else "+gzip"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class Layout:
    """An OCI image layout the test writes: each image is its layers and config."""

    path: Path
    manifests: list[dict[str, object]] = field(default_factory=list)

    def blob(self, data: bytes) -> dict[str, object]:
        digest = _digest(data)
        target = self.path / "blobs/sha256" / digest.partition(":")[2]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return {"digest": digest, "size": len(data)}

    def image(
        self, layers: list[tuple[bytes, str]], *, arch: str = "amd64", config: dict | None = None
    ) -> dict[str, object]:
        """An image manifest of `layers` (bottom first); its descriptor."""
        image_config = {
            "architecture": arch,
            "os": "linux",
            "config": config or {},
            "rootfs": {"type": "layers", "diff_ids": [diff for _, diff in layers]},
        }
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                **self.blob(json.dumps(image_config).encode()),
            },
            "layers": [
                {"mediaType": LAYER_TYPE + _compression(data), **self.blob(data)}
                for data, _ in layers
            ],
        }
        return {
            "mediaType": manifest["mediaType"],
            **self.blob(json.dumps(manifest).encode()),
            "platform": {"os": "linux", "architecture": arch},
        }

    def tag(self, tag: str, descriptor: dict[str, object]) -> None:
        self.manifests.append(
            {**descriptor, "annotations": {"org.opencontainers.image.ref.name": tag}}
        )
        self.path.joinpath("oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
        self.path.joinpath("index.json").write_text(
            json.dumps({"schemaVersion": 2, "manifests": self.manifests})
        )

    def index(self, images: list[dict[str, object]]) -> dict[str, object]:
        """A manifest list of `images`; its descriptor."""
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": images,
        }
        return {"mediaType": index["mediaType"], **self.blob(json.dumps(index).encode())}


@dataclass
class Registry:
    """A running registry: where it listens, its CA, its storage, how to reach it."""

    host: str
    folder: Path
    ca: Path
    storage: Path
    process: subprocess.Popen[bytes]

    def push(self, layout: Layout, tag: str, repository: str, as_tag: str | None = None) -> str:
        """Push `layout`'s `tag` (with every platform of a list) as REPOSITORY:TAG, or as
        REPOSITORY:AS_TAG (a registry's tag may hold `__`, a layout's may not); its
        reference."""
        reference = f"{self.host}/{repository}:{as_tag or tag}"
        subprocess.run(
            [
                *("skopeo", "copy", "--quiet", "--all", "--preserve-digests"),
                *("--dest-creds", f"{USER}:{PASSWORD}", "--dest-cert-dir", str(self.ca.parent)),
                f"oci:{layout.path}:{tag}",
                f"docker://{reference}",
            ],
            check=True,
            capture_output=True,
        )
        return reference

    def blob_file(self, digest: str) -> Path:
        hexdigest = digest.partition(":")[2]
        return self.storage / f"docker/registry/v2/blobs/sha256/{hexdigest[:2]}/{hexdigest}/data"

    def auth_file(self, path: Path, password: str = PASSWORD) -> Path:
        """A Docker config.json with credentials for this registry."""
        token = base64.b64encode(f"{USER}:{password}".encode()).decode()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"auths": {self.host: {"auth": token}}}))
        return path


@contextlib.contextmanager
def running_registry(folder: Path) -> Iterator[Registry]:
    """docker-registry on a free loopback port, TLS and htpasswd, stopped at the end."""
    certificates = folder / "certs"
    ca, crt, key = make_certificates(certificates)
    (folder / "trust").mkdir()  # skopeo's cert dir: the CA alone, as *.crt
    shutil.copy(ca, folder / "trust/ca.crt")
    htpasswd = folder / "htpasswd"
    htpasswd.write_text(f"{USER}:{_bcrypt(PASSWORD)}\n")
    port = free_port()
    storage = folder / "storage"
    config = folder / "config.yml"
    config.write_text(
        "version: 0.1\nlog: {level: error}\n"
        f"storage: {{filesystem: {{rootdirectory: {storage}}}}}\n"
        f"http: {{addr: 127.0.0.1:{port}, tls: {{certificate: {crt}, key: {key}}}}}\n"
        f"auth: {{htpasswd: {{realm: sprout-test, path: {htpasswd}}}}}\n"
    )
    log = (folder / "registry.log").open("wb")
    process = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log, stderr=log)
    try:
        _wait_for(port, process)
        yield Registry(f"127.0.0.1:{port}", folder, folder / "trust/ca.crt", storage, process)
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"docker-registry exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError("docker-registry did not listen within 15 s")


@contextlib.contextmanager
def cutting_proxy(target: str, cut_after: int) -> Iterator[str]:
    """A TCP relay to `target` on another loopback port that goes down for good once it has
    relayed `cut_after` bytes towards the client: a registry that dies mid-pull."""
    host, port = target.rsplit(":", 1)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    relayed = [0]
    down = threading.Event()
    sockets: list[socket.socket] = [listener]

    def pipe(source: socket.socket, sink: socket.socket, counted: bool) -> None:
        with contextlib.suppress(OSError):
            while not down.is_set() and (data := source.recv(65536)):
                sink.sendall(data)
                if counted:
                    relayed[0] += len(data)
                    if relayed[0] >= cut_after:
                        down.set()
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while not down.is_set():
                client, _ = listener.accept()
                if down.is_set():
                    client.close()
                    break
                upstream = socket.create_connection((host, int(port)))
                sockets.extend((client, upstream))
                threading.Thread(target=pipe, args=(client, upstream, False), daemon=True).start()
                threading.Thread(target=pipe, args=(upstream, client, True), daemon=True).start()
        listener.close()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        down.set()
        for end in sockets:
            with contextlib.suppress(OSError):
                end.close()


BASE = layer_blob({"etc/base-release": b"base 1\n", "opt/big": os.urandom(2_000_000)})
"""A base layer the pull tests' images share (random bytes: gzip cannot shrink it)."""


def push_app(registry: Registry, tmp_path: Path, repository: str, app: bytes) -> str:
    """An image of BASE under a layer of `app` at /etc/app, pushed as REPOSITORY:v1; its
    reference."""
    layout = Layout(tmp_path / f"layout-{repository.replace('/', '-')}")
    config = {"Env": ["PATH=/opt/app/bin:/usr/bin:/bin", "APP=1"], "WorkingDir": "/srv"}
    own = layer_blob({"etc/app": app})
    layout.tag("v1", layout.image([BASE, own], config=config))
    return registry.push(layout, "v1", repository)
