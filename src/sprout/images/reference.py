"""Image references as Docker reads them: `ubuntu:24.04`, `alexgshaw/x:tag`,
`ghcr.io/astral-sh/uv:0.8.14`, `127.0.0.1:5000/demo/app@sha256:...`.

The first component is a registry when it has a `.` or a `:` or is `localhost`;
otherwise the image is on Docker Hub, whose one-component names live under
`library/`. The cache knows an image by the short form a Dockerfile would write
(`python:3.11-slim`, no `docker.io/library/`), with its digest when the
reference pins one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sprout.images.cache import ImageError

DOCKER_HUB = "docker.io"
"""The registry of a name without one; `registry-1.docker.io` is where it answers."""
HUB_ALIASES = ("docker.io", "index.docker.io", "registry-1.docker.io")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
TAG = re.compile(r"[\w][\w.-]{0,127}")
REGISTRY = re.compile(r"(?:[a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+(?::\d+)?|\[[0-9a-fA-F:]+\](?::\d+)?")


@dataclass(frozen=True)
class ImageReference:
    """One image in one registry, by tag or by digest."""

    registry: str
    repository: str
    """The path in the registry (`library/ubuntu`, `alexgshaw/x`)."""
    tag: str | None
    digest: str | None

    @property
    def name(self) -> str:
        """The cache's name: short, as a Dockerfile writes it, with the pinned digest."""
        path = self.repository
        if self.registry == DOCKER_HUB:
            path = path.removeprefix("library/")
        else:
            path = f"{self.registry}/{path}"
        if self.tag is not None:
            path += f":{self.tag}"
        return path + (f"@{self.digest}" if self.digest else "")

    @property
    def tagged(self) -> str:
        """The name without its digest (what a digest-only reference has no tag for)."""
        return self.name.split("@", 1)[0]

    def at(self, digest: str) -> str:
        """skopeo's reference to `digest` in this image's repository."""
        return f"docker://{self.registry}/{self.repository}@{digest}"

    @property
    def transport(self) -> str:
        """skopeo's reference to this image as written."""
        where = f"{self.registry}/{self.repository}"
        if self.digest is not None:
            return f"docker://{where}@{self.digest}"
        return f"docker://{where}:{self.tag or 'latest'}"


def parse_reference(text: str) -> ImageReference:
    """`text` as Docker reads it; ImageError naming it when it is no image reference."""
    value = text.strip().removeprefix("docker://")
    rest, _, digest = value.partition("@")
    if digest and not DIGEST.fullmatch(digest):
        raise ImageError(f"image {text!r}: the digest must be sha256: and 64 hex digits")
    first, slash, remainder = rest.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, remainder
        if not REGISTRY.fullmatch(registry):
            raise ImageError(f"image {text!r}: {registry!r} is no registry host")
    else:
        registry, path = DOCKER_HUB, rest
    if registry in HUB_ALIASES:
        registry = DOCKER_HUB
    last = path.rsplit("/", 1)[-1]
    tag = None
    if ":" in last:
        path, _, tag = path.rpartition(":")
        if not TAG.fullmatch(tag):
            raise ImageError(f"image {text!r}: {tag!r} is no tag")
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    if not path or not all(COMPONENT.fullmatch(part) for part in path.split("/")):
        raise ImageError(
            f"image {text!r}: not an image reference (lowercase NAME[:TAG][@sha256:DIGEST], "
            "an optional REGISTRY/ first)"
        )
    if tag is None and not digest:
        tag = "latest"
    return ImageReference(registry, path, tag, digest or None)
