"""Which image of a manifest list is this machine's, as `docker pull` picks it."""

from __future__ import annotations

import platform as host_platform
from dataclasses import dataclass
from typing import Any

from sprout.images.cache import ImageError

MANIFEST_LISTS = frozenset(
    {
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    }
)
ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le"}
DEFAULT_VARIANTS = {"arm64": "v8"}
"""The variant a manifest may leave out for an architecture."""


@dataclass(frozen=True)
class Platform:
    """`os/architecture[/variant]`, as `--platform` and manifest lists write it."""

    os: str
    architecture: str
    variant: str = ""

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)

    @classmethod
    def parse(cls, text: str) -> Platform:
        parts = text.strip().split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise ImageError(f"--platform {text!r}: expected OS/ARCH or OS/ARCH/VARIANT")
        return cls(parts[0], ARCHITECTURES.get(parts[1], parts[1]), *parts[2:])

    def matches(self, described: dict[str, Any]) -> bool:
        """Whether a manifest list's `platform` entry is this one."""
        if described.get("os") != self.os or described.get("architecture") != self.architecture:
            return False
        variant = described.get("variant") or DEFAULT_VARIANTS.get(self.architecture, "")
        wanted = self.variant or DEFAULT_VARIANTS.get(self.architecture, "")
        return not wanted or variant == wanted


def this_machine() -> Platform:
    machine = host_platform.machine()
    return Platform("linux", ARCHITECTURES.get(machine, machine))


def is_list(manifest: dict[str, Any]) -> bool:
    return manifest.get("mediaType") in MANIFEST_LISTS or "manifests" in manifest


def choose(manifest_list: dict[str, Any], wanted: Platform, image: str) -> str:
    """The digest of `wanted`'s image in `manifest_list`; ImageError naming the platforms
    it has when it has none for `wanted`."""
    entries = [m for m in manifest_list.get("manifests") or [] if isinstance(m, dict)]
    for entry in entries:
        if wanted.matches(entry.get("platform") or {}) and isinstance(entry.get("digest"), str):
            return str(entry["digest"])
    offered = sorted(
        {
            str(Platform(p.get("os", "?"), p.get("architecture", "?"), p.get("variant", "")))
            for entry in entries
            if (p := entry.get("platform") or {}) and p.get("os") != "unknown"
        }
    )
    raise ImageError(
        f"image {image}: no image for {wanted} (the registry has {', '.join(offered) or 'none'}); "
        "--platform picks another"
    )
