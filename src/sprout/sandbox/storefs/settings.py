"""The two settings of sprout's store filesystem (sprout.sandbox.storefs.btrfs), read from
the environment and checked in one place:

    SPROUT_STORE_FS     auto (the default) or off (layers stay where the store is)
    SPROUT_STORE_SIZE   the image's size when made (e.g. 64G; default: the free space
                        of the disk holding the cache, at most 256 GiB)

Every caller reads both through `settings()`, which checks both, so a malformed one is
refused (a `BadArgument` naming it, exit 2 from `sprout`) wherever either is read, also
where its value goes unused: the image exists already, or the store's disk clones.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from sprout.sandbox.errors import BadArgument

SWITCH = "SPROUT_STORE_FS"
SIZE = "SPROUT_STORE_SIZE"
DEFAULT_MAX_SIZE = 256 << 30
"""The default size is the cache disk's free space, but no more than this."""
MIN_SIZE = 256 << 20
"""mkfs.btrfs needs about 114 MiB; below this a store would be full at once."""
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@dataclass(frozen=True)
class Settings:
    """`SPROUT_STORE_FS` and `SPROUT_STORE_SIZE`, each checked."""

    enabled: bool
    """sprout may keep layers on its own store filesystem (`auto`; `off`: never)."""
    size: int | None
    """The image's size when made; None: the default (`image_size`)."""

    def image_size(self, free: int) -> int:
        """The size a new image gets: the setting, else `free` (the cache disk's) capped."""
        return self.size if self.size is not None else max(MIN_SIZE, min(free, DEFAULT_MAX_SIZE))


def settings() -> Settings:
    """Both settings, read and checked together whichever of them the caller needs: a typo
    is told on the first command that reads either, not on the first machine that would
    have used it."""
    return Settings(_enabled(), _size())


def _enabled() -> bool:
    """Whether `SPROUT_STORE_FS` lets sprout use its own store filesystem."""
    text = os.environ.get(SWITCH, "auto").strip()
    if text.lower() not in ("auto", "off"):
        raise BadArgument(SWITCH, f"expected auto or off, got {text!r}")
    return text.lower() == "auto"


def _size() -> int | None:
    """`SPROUT_STORE_SIZE` in bytes, None when unset."""
    text = os.environ.get(SIZE, "").strip()
    if not text:
        return None
    found = re.fullmatch(r"(\d+)\s*([KMGT]?)(?:i?B)?", text, re.IGNORECASE)
    if found is None:
        raise BadArgument(SIZE, f"expected a size such as 64G or 512M, got {text!r}")
    size = int(found.group(1)) * UNITS[found.group(2).upper()]
    if size < MIN_SIZE:
        raise BadArgument(SIZE, f"{text!r} is under the smallest store (256M)")
    return size


def configured_size(free: int) -> int:
    """The image's size: `SPROUT_STORE_SIZE`, else `free` (the cache disk's) capped."""
    return settings().image_size(free)
