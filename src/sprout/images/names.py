"""What a Dockerfile's `FROM` names, and the image sprout uses for it.

An image imported under that name (`sprout image import`) is used as it is.
Otherwise a few common names are built from Debian's archive, each an
approximation that says so: `python:3.11-slim` is Debian bookworm with its
Python 3.11, `python:3.13-slim` trixie with 3.13, `python:3.12-slim` the same
trixie (no Debian has 3.12), `ubuntu:24.04` the nearest Debian (trixie).
Anything else must be imported or mapped (`--images`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sprout.images.cache import Image, ImageCache, ImageError
from sprout.images.debian import (
    BASE_PACKAGES,
    BUILDPACK_CURL_PACKAGES,
    BUILDPACK_PACKAGES,
    BUILDPACK_SCM_PACKAGES,
    PYTHON_PACKAGES,
    TBENCH_PACKAGES,
    DebianRecipe,
    ensure_debian,
)


@dataclass(frozen=True)
class ImageRequest:
    """The image a `FROM` asks for, and how sprout would build it."""

    name: str
    """The reference, normalised (`python:3.11-slim`, no registry, no digest)."""
    recipe: DebianRecipe | None
    approximation: str
    """What sprout builds instead, said once per run ("" when nothing is approximated)."""


def normalize(reference: str) -> str:
    """`docker.io/library/python:3.11-slim@sha256:...` as `python:3.11-slim`; `debian` as
    `debian:latest`."""
    name = reference.strip().split("@", 1)[0]
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        name = name.removeprefix(prefix)
    name = name.removeprefix("library/")
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def _python(suite: str) -> DebianRecipe:
    return DebianRecipe(suite, BASE_PACKAGES + PYTHON_PACKAGES, pip_anywhere=True)


NEAREST_DEBIAN = {
    "jammy": ("bookworm", "Ubuntu 22.04"),
    "focal": ("bookworm", "Ubuntu 20.04"),
    "bullseye": ("bookworm", "Debian bullseye"),
    "noble": ("trixie", "Ubuntu 24.04"),
}
"""Suites sprout does not build, and the Debian suite nearest to each."""


def _buildpack(suite: str, layer: str) -> tuple[DebianRecipe, str]:
    """`buildpack-deps:SUITE[-curl|-scm]`: Debian with the image's packages, on the nearest
    suite sprout builds."""
    packages: tuple[str, ...] = BUILDPACK_CURL_PACKAGES
    if layer != "-curl":
        packages += BUILDPACK_SCM_PACKAGES
    if not layer:
        packages += BUILDPACK_PACKAGES
    built, stands_for = NEAREST_DEBIAN.get(suite, (suite, ""))
    what = f"Debian {built} with buildpack-deps' packages"
    if not layer:
        what += " (no ImageMagick, MySQL, Berkeley DB or Kerberos headers)"
    if stands_for:
        what += f", the nearest Debian to {stands_for}"
    return DebianRecipe(built, packages), what


BUILTIN: list[tuple[str, Callable[[re.Match[str]], tuple[DebianRecipe, str]]]] = [
    (
        r"python:3\.11(\.\d+)?(-slim)?(-bookworm)?",
        lambda m: (_python("bookworm"), "Debian bookworm with its Python 3.11"),
    ),
    (
        r"python:3\.13(\.\d+)?(-slim)?(-(bookworm|trixie))?",
        lambda m: (_python("trixie"), "Debian trixie with its Python 3.13"),
    ),
    (
        r"python:3\.12(\.\d+)?(-slim)?(-(bookworm|trixie))?",
        lambda m: (
            _python("trixie"),
            "Debian trixie with its Python 3.13, not 3.12 (Debian has none)",
        ),
    ),  # 3.13 runs what 3.12 runs but a few removed modules; 3.11 lacks 3.12's syntax
    (r"debian:(bookworm|12)(-slim)?", lambda m: (DebianRecipe("bookworm"), "")),
    (r"debian:(trixie|13|latest|stable)(-slim)?", lambda m: (DebianRecipe("trixie"), "")),
    (
        r"ubuntu:(24\.04|noble|latest)",
        lambda m: (DebianRecipe("trixie"), "Debian trixie, the nearest Debian to Ubuntu 24.04"),
    ),
    (
        r"ghcr\.io/laude-institute/t-bench/ubuntu-24-04:[\w.-]+",
        lambda m: (
            DebianRecipe("trixie", BASE_PACKAGES + TBENCH_PACKAGES),
            "Debian trixie, the nearest Debian to Terminal-Bench's Ubuntu 24.04 base",
        ),
    ),
    (
        r"ghcr\.io/laude-institute/t-bench/python-3-13:[\w.-]+",
        lambda m: (
            DebianRecipe(
                "trixie", BASE_PACKAGES + PYTHON_PACKAGES + TBENCH_PACKAGES, pip_anywhere=True
            ),
            "Debian trixie with its Python 3.13, for Terminal-Bench's Python 3.13 base",
        ),
    ),
    (
        r"buildpack-deps:(?P<suite>bookworm|trixie|jammy|noble|focal|bullseye)(?P<layer>-curl|-scm)?",
        lambda m: _buildpack(m["suite"], m["layer"] or ""),
    ),
    (
        r"ubuntu:(22\.04|jammy)",
        lambda m: (DebianRecipe("bookworm"), "Debian bookworm, the nearest to Ubuntu 22.04"),
    ),
]
"""Names sprout can build itself: a pattern and (recipe, what it approximates)."""


def resolve_from(reference: str) -> ImageRequest | None:
    """What sprout builds for `reference`, or None when it cannot build it itself."""
    name = normalize(reference)
    for pattern, make in BUILTIN:
        match = re.fullmatch(pattern, name)
        if match:
            recipe, approximation = make(match)
            said = f"{name} is approximated by {approximation}" if approximation else ""
            return ImageRequest(name, recipe, said)
    return None


def _unknown(name: str) -> str:
    return (
        f"image {name}: not in the image cache, and not one sprout builds itself; import it "
        f"(docker save {name} -o image.tar; sprout image import image.tar --name {name}) or "
        f"give a root-filesystem folder for it in an --images table"
    )


def image_for(reference: str, cache: ImageCache | None = None) -> tuple[str, str]:
    """(the image's name, what it approximates or "") for `reference`: an imported image is
    itself; one sprout builds from Debian says what it stands in for. ImageError when the
    cache lacks it and sprout cannot build it."""
    name = normalize(reference)
    found = (cache or ImageCache()).get(name)
    if found is not None and found.source.get("kind") != "debian":
        return name, ""
    request = resolve_from(name)
    if request is None:
        if found is not None:
            return name, ""
        raise ImageError(_unknown(name))
    return name, request.approximation


def ensure_image(name: str, cache: ImageCache | None = None) -> Image:
    """The image called `name`: imported or built before, else built now when sprout can."""
    cache = cache or ImageCache()
    found = cache.get(name)
    if found is not None:
        return found
    request = resolve_from(name)
    if request is None or request.recipe is None:
        raise ImageError(_unknown(name))
    return ensure_debian(name, request.recipe, cache)
