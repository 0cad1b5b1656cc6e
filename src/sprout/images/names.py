"""What a Dockerfile's `FROM` names, and the image sprout uses for it.

An image imported under that name (`sprout image import`) is used as it is.
Otherwise it is pulled from its registry (`sprout.images.pull`). Only when no
registry answers (or with `--images approximate`) are a few common names built
from Debian's archive instead, each an approximation that says so:
`python:3.11-slim` is Debian bookworm with its Python 3.11, `python:3.13-slim`
trixie with 3.13, `python:3.12-slim` the same trixie (no Debian has 3.12),
`ubuntu:24.04` the nearest Debian (trixie).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from sprout.images.cache import ImageCache, ImageError
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
from sprout.images.pull import pull
from sprout.images.pull_progress import PullProgress
from sprout.images.reference import parse_reference
from sprout.images.skopeo import RegistryUnreachable
from sprout.sandbox import Image

ImageMode = Literal["pull", "cache", "approximate"]
"""Where a run may take an image from (`--images`): see `choose_image`."""
ImageHow = Literal["cache", "pulled", "approximation"]


@dataclass(frozen=True)
class ImageRequest:
    """The image a `FROM` asks for, and how sprout would build it."""

    name: str
    """The reference, normalised (`python:3.11-slim`, no registry, no digest)."""
    recipe: DebianRecipe | None
    approximation: str
    """What sprout builds instead, said once per run ("" when nothing is approximated)."""


def normalize(reference: str) -> str:
    """`docker.io/library/python:3.11-slim` as `python:3.11-slim`, a pinned digest kept;
    `debian` as `debian:latest`. ImageError when `reference` is no image reference."""
    return parse_reference(reference).name


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
    """What sprout builds for `reference` (its digest aside), or None when it cannot."""
    name = parse_reference(reference).tagged
    for pattern, make in BUILTIN:
        match = re.fullmatch(pattern, name)
        if match:
            recipe, approximation = make(match)
            said = f"{name} is approximated by {approximation}" if approximation else ""
            return ImageRequest(name, recipe, said)
    return None


@dataclass(frozen=True)
class ImageChoice:
    """The image a run uses for a name, and why: said once per run, kept in results.json."""

    image: Image
    how: ImageHow
    reason: str
    approximation: str
    """What stands in for the image named ("" when it is the image itself)."""

    @property
    def digest(self) -> str | None:
        """The registry digest of a pulled image: what pins the same bytes elsewhere."""
        digest = self.image.source.get("digest")
        return str(digest) if digest else None

    def to_json(self) -> dict[str, object]:
        return {
            "how": self.how,
            "reason": self.reason,
            **({"digest": self.digest} if self.digest else {}),
            **({"approximation": self.approximation} if self.approximation else {}),
        }


def _in_cache(name: str, found: Image) -> ImageChoice:
    request = resolve_from(name) if found.source.get("kind") == "debian" else None
    approximation = request.approximation if request is not None else ""
    kind = found.source.get("kind", "?")
    what = f"{kind} {found.source['digest']}" if kind == "registry" else kind
    reason = f"{name}: in the image cache ({what})"
    if approximation:
        reason += f"; {approximation}"
    return ImageChoice(found, "cache", reason, approximation)


def choose_image(
    reference: str,
    mode: ImageMode = "pull",
    cache: ImageCache | None = None,
    progress: PullProgress | None = None,
) -> ImageChoice:
    """The image `reference` names, in the order a run takes them: the image cache's (any
    mode), then the registry's (`pull`), then sprout's Debian approximation (`pull` when no
    registry answered, or `approximate`). ImageError, one line, when none of them is."""
    cache = cache or ImageCache()
    name = normalize(reference)
    found = cache.get(name)
    if found is not None:
        return _in_cache(name, found)
    if mode == "cache":
        raise ImageError(
            f"image {name}: not in the image cache, and --images cache pulls nothing "
            f"(sprout image pull {name})"
        )
    unreachable: RegistryUnreachable | None = None
    if mode == "pull":
        try:
            image = pull(name, cache=cache, progress=progress)
        except RegistryUnreachable as error:
            unreachable = error
        else:
            reason = f"{name}: pulled from {image.source['registry']} ({image.source['digest']})"
            return ImageChoice(image, "pulled", reason, "")
    request = resolve_from(name)
    if request is None or request.recipe is None:
        if unreachable is not None:
            raise ImageError(
                f"{unreachable}; sprout builds no approximation of it (--images approximate "
                "knows python, debian, ubuntu and buildpack-deps names)"
            )
        raise ImageError(_unknown(name))
    image = ensure_debian(name, request.recipe, cache)
    why = "--images approximate" if unreachable is None else str(unreachable)
    reason = f"{name}: {request.approximation or 'built from Debian'} ({why})"
    return ImageChoice(image, "approximation", reason, request.approximation)


def _unknown(name: str) -> str:
    return (
        f"image {name}: not in the image cache, and not one sprout builds itself; pull it "
        f"(sprout image pull {name}), import it (docker save {name} -o image.tar; sprout "
        f"image import image.tar --name {name}) or give a root-filesystem folder for it in "
        "an --images table"
    )


def ensure_image(name: str, mode: ImageMode = "pull", cache: ImageCache | None = None) -> Image:
    """The image called `name`, as `choose_image` finds it."""
    return choose_image(name, mode, cache).image
