"""Root filesystems built from Debian's archive with mmdebstrap: no container daemon needed.

A recipe (suite, variant, packages, mirror) names its image: the same recipe is
the same digest, built once per machine. As root mmdebstrap runs in its root
mode, otherwise in its unshare mode (which needs subordinate ids for the user) to a
tarball that is unpacked with the user's ids.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sprout.images.cache import ImageCache, ImageError
from sprout.images.oci import apply_layer
from sprout.sandbox import Image

DEFAULT_MIRROR = "http://deb.debian.org/debian"
SUITES = ("bookworm", "trixie")
"""Suites sprout builds and tests; others may work, and are refused only if mmdebstrap fails."""
BUILD_TIMEOUT_S = 1800
PYTHON_PACKAGES = ("python3", "python3-pip", "python3-venv", "python-is-python3")
"""What a `python:3.X-slim` image has that Debian's minbase lacks."""
BASE_PACKAGES = ("ca-certificates",)
TBENCH_PACKAGES = ("curl", "tmux", "asciinema")
"""What Terminal-Bench's base images add to their distribution."""
BUILDPACK_CURL_PACKAGES = ("ca-certificates", "curl", "wget", "gnupg", "netbase")
BUILDPACK_SCM_PACKAGES = ("git", "openssh-client", "procps")
BUILDPACK_PACKAGES = (
    *("autoconf", "automake", "bzip2", "dpkg-dev", "file", "g++", "gcc", "libtool", "make"),
    *("patch", "unzip", "xz-utils", "libbz2-dev", "libc6-dev", "libcurl4-openssl-dev"),
    *("libffi-dev", "libgdbm-dev", "libglib2.0-dev", "libgmp-dev", "libjpeg-dev", "liblzma-dev"),
    *("libncurses-dev", "libpng-dev", "libpq-dev", "libreadline-dev", "libsqlite3-dev"),
    *("libssl-dev", "libxml2-dev", "libxslt1-dev", "libyaml-dev", "zlib1g-dev"),
)
"""The compilers and headers of Docker's `buildpack-deps` images (their `-curl` and `-scm`
layers below them), without ImageMagick, MySQL, Berkeley DB and Kerberos headers."""
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]*$")


@dataclass(frozen=True)
class DebianRecipe:
    """How to build one root filesystem."""

    suite: str
    packages: tuple[str, ...] = BASE_PACKAGES
    variant: str = "minbase"
    mirror: str = DEFAULT_MIRROR
    pip_anywhere: bool = False
    """Drop Debian's EXTERNALLY-MANAGED marker, so `pip install` works system-wide as it
    does in the python:3.X images (which install Python under /usr/local)."""
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z]+(-[a-z]+)?", self.suite):
            raise ImageError(f"suite {self.suite!r}: expected a Debian suite such as bookworm")
        bad = [p for p in self.packages if not _PACKAGE.match(p)]
        if bad:
            raise ImageError(f"packages: {bad[0]!r} is not a Debian package name")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("notes")
        return {"kind": "debian", **data, "packages": sorted(self.packages)}

    @property
    def digest(self) -> str:
        text = json.dumps(self.to_json(), sort_keys=True)
        return "debian-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def mmdebstrap_command(recipe: DebianRecipe, target: Path) -> list[str]:
    """The mmdebstrap command line that builds `recipe` into folder `target`."""
    program = shutil.which("mmdebstrap")
    if program is None:
        raise ImageError("building a Debian image needs mmdebstrap (apt-get install mmdebstrap)")
    command = [program, "--quiet", f"--variant={recipe.variant}"]
    if os.geteuid() != 0:
        command.append("--mode=unshare")
    if recipe.packages:
        command.append("--include=" + ",".join(sorted(recipe.packages)))
    if recipe.pip_anywhere:
        command.append('--customize-hook=rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED')
    return [*command, recipe.suite, str(target), recipe.mirror]


def build_debian(recipe: DebianRecipe, target: Path) -> None:
    """Build `recipe` into the empty folder `target`; ImageError with mmdebstrap's last
    lines when it fails (an unreachable mirror, an unknown package).

    A user (not root) gets a tarball from mmdebstrap's user namespace, unpacked here with
    the user's own ids: a rootless sandbox maps the user to root, so they are root's inside.
    """
    rootless = os.geteuid() != 0
    output = target.parent / "rootfs.tar" if rootless else target
    command = mmdebstrap_command(recipe, output)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ImageError(f"mmdebstrap {recipe.suite}: took more than {BUILD_TIMEOUT_S} s") from None
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-4:])
        raise ImageError(f"mmdebstrap {recipe.suite} failed (exit {done.returncode}): {tail}")
    if rootless:
        with tarfile.open(output) as archive:
            apply_layer(archive, target)
        output.unlink()


def ensure_debian(name: str, recipe: DebianRecipe, cache: ImageCache | None = None) -> Image:
    """Image `name` built from `recipe`, from the cache when it was built before."""
    cache = cache or ImageCache()
    return cache.ensure(
        name, recipe.digest, recipe.to_json(), lambda root: build_debian(recipe, root)
    )
