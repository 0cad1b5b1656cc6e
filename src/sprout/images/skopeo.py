"""Running skopeo, the registry client sprout pulls with, and reading what went wrong.

skopeo (Debian package `skopeo`, from the containers project that Podman and
CRI-O pull with) already does what a registry client must get right, and reads
the files users already keep for Podman and Docker: credentials from
`REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`,
`~/.config/containers/auth.json` and `~/.docker/config.json` (credential helpers
included); mirrors, blocked and insecure registries from `registries.conf`
(`CONTAINERS_REGISTRIES_CONF`); certificates from `/etc/containers/certs.d`; and
signature policy from `/etc/containers/policy.json`. It verifies every blob's
digest as it streams and retries broken transfers. sprout only asks it for
manifests and for copies into an OCI layout, and turns its failures into one
line each.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from sprout.images.cache import ImageError
from sprout.sandbox import system_tool

RETRIES = 3
"""Times skopeo retries a transfer that broke before it gives up."""
INSPECT_RETRIES = 1
"""Times a manifest read is retried: once, a second later. Each retry of a registry that
does not answer at all (offline, no such host) costs a run its backoff for every image
before the run can fall back; a transfer that broke midway is worth more tries."""
INSPECT_TIMEOUT_S = 120.0


class RegistryUnreachable(ImageError):
    """No registry answered (no route, no name, refused, timed out): the one failure after
    which a run may fall back to an approximation."""


def skopeo_command(arguments: Sequence[str]) -> list[str]:
    """skopeo with `arguments`, and the registries.conf that CONTAINERS_REGISTRIES_CONF
    names (Podman reads the variable; skopeo 1.9 takes it only as an option)."""
    found = system_tool("skopeo")
    if found is None:
        raise RegistryUnreachable(
            "skopeo is not installed (Debian package skopeo): sprout pulls images with it"
        )
    configured = os.environ.get("CONTAINERS_REGISTRIES_CONF")
    return [found, *(["--registries-conf", configured] if configured else []), *arguments]


def credential_files() -> list[str]:
    """Where skopeo looks for credentials, first match wins (containers-auth.json(5))."""
    home = Path.home()
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    configured = os.environ.get("REGISTRY_AUTH_FILE")
    return [
        *([configured] if configured else []),
        f"{runtime}/containers/auth.json"
        if runtime
        else f"/run/containers/{os.getuid()}/auth.json",
        str(home / ".config/containers/auth.json"),
        str(home / ".docker/config.json"),
        str(home / ".dockercfg"),
    ]


UNREACHABLE = re.compile(
    r"no such host|connection refused|network is unreachable|no route to host|i/o timeout|"
    r"TLS handshake timeout|connection reset by peer|unexpected EOF|server misbehaving|"
    r"Client\.Timeout|context deadline exceeded|dial tcp|broken pipe"
)
UNAUTHORIZED = re.compile(
    r"unauthorized|authentication required|access to the resource is denied|denied:|"
    r"401 Unauthorized",
    re.I,
)
NOT_FOUND = re.compile(r"manifest unknown|name unknown|not found|404", re.I)
MISMATCH = re.compile(r"[Dd]igest did not match[^\"]*|digest mismatch[^\"]*")
CERTIFICATE = re.compile(r"x509: [^\"]*|certificate [^\"]*")
DISK_FULL = re.compile(r"no space left on device|disk quota exceeded", re.I)


def _message(stderr: str) -> str:
    """skopeo's last `msg="..."`, else its last line."""
    found = re.findall(r'msg="((?:[^"\\]|\\.)*)"', stderr)
    if found:
        message = found[-1].replace('\\"', '"')
        return re.sub(r'^Error parsing image name "[^"]*": ', "", message)
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "skopeo failed without a message"


def registry_error(stderr: str, image: str, registry: str) -> ImageError:
    """The one line for a failed skopeo call about `image` in `registry`."""
    message = _message(stderr)
    if DISK_FULL.search(message):
        return ImageError(f"image {image}: the disk is full ({message}); nothing was kept")
    if found := MISMATCH.search(message):
        return ImageError(
            f"image {image}: {registry} served bytes that are not the image's ({found[0]}); "
            "nothing of them was kept"
        )
    if found := CERTIFICATE.search(message):
        return ImageError(
            f"image {image}: {registry}'s certificate is not trusted ({found[0]}); put its CA "
            f"in /etc/containers/certs.d/{registry}/ca.crt, or mark it insecure in "
            "registries.conf"
        )
    if UNAUTHORIZED.search(message):
        return ImageError(
            f"image {image}: {registry} refused the credentials ({message.rsplit(': ', 1)[-1]}); "
            f"looked for them in {', '.join(credential_files())}"
        )
    if UNREACHABLE.search(message):
        return RegistryUnreachable(f"image {image}: no registry answered ({registry}: {message})")
    if NOT_FOUND.search(message):
        return ImageError(f"image {image}: {registry} has no such image ({message})")
    return ImageError(f"image {image}: skopeo failed: {message}")


def run_skopeo(
    arguments: Sequence[str], image: str, registry: str, timeout: float | None = None
) -> bytes:
    """skopeo's standard output for `arguments`; ImageError (one line) when it fails."""
    command = skopeo_command(arguments)
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RegistryUnreachable(
            f"image {image}: no registry answered ({registry}: no answer in {timeout:.0f} s)"
        ) from None
    if done.returncode != 0:
        raise registry_error(done.stderr.decode(errors="replace"), image, registry)
    return done.stdout


def inspect_raw(transport: str, image: str, registry: str) -> bytes:
    """The manifest (or manifest list) `transport` names, as the registry serves it."""
    return run_skopeo(
        ["inspect", "--raw", "--retry-times", str(INSPECT_RETRIES), transport],
        image,
        registry,
        timeout=INSPECT_TIMEOUT_S,
    )


def copy_arguments(source: str, layout: Path, tag: str, blobs: Path) -> list[str]:
    """`skopeo copy` of `source` into the OCI layout `layout`, every blob in `blobs` (the
    machine's one blob cache: a blob already there is not fetched again)."""
    return [
        "copy",
        "--quiet",
        "--retry-times",
        str(RETRIES),
        "--dest-shared-blob-dir",
        str(blobs),
        source,
        f"oci:{layout}:{tag}",
    ]
