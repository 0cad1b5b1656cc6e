"""Which host ids a sandbox's users are, and giving host-written files to the sandbox's root.

Run as root, a sandbox's ids 0..65535 are host ids BASE..BASE+65535 (a full
range, so that `apt-get` can switch to `_apt`). Root inside is then an
unprivileged user outside: a file it writes lands on disk owned by BASE, and
any host file it could reach reads as owned by nobody. Files the host puts
into a layer (a task's COPY, the verifier's tests) are given to BASE so that
root inside owns them, as Docker's COPY gives them to root.

The range is a machine-wide choice, recorded in each store: `SPROUT_ID_RANGE`
(`BASE:COUNT`) overrides the default, which sits in systemd's range for
containers, far above the ranges `/etc/subuid` hands to users.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sprout.sandbox.errors import BadArgument

DEFAULT_BASE = 0x40000000
"""1,073,741,824: inside systemd's container range (524288..1879048191), above
what `/etc/subuid` gives users (100000 + 65536 per user)."""
FULL_RANGE = 65536
OVERFLOW_ID = 65534
"""What the kernel shows for an id with no mapping (nobody)."""
ENVIRONMENT = "SPROUT_ID_RANGE"
SUBORDINATE_FILES = ("/etc/subuid", "/etc/subgid")


@dataclass(frozen=True)
class IdRange:
    """Host ids `base`..`base + count - 1`, seen inside as 0..count-1."""

    base: int
    count: int

    def __post_init__(self) -> None:
        if not self.base > 0 or not self.count > 0 or self.base + self.count > 2**32 - 1:
            raise BadArgument(
                "id_range", f"{self.base}:{self.count} is not an unprivileged range of ids"
            )

    @classmethod
    def parse(cls, text: str, where: str) -> IdRange:
        """`BASE:COUNT`, as `SPROUT_ID_RANGE` or a store's metadata write it; a BadArgument
        naming `where` (the variable, the store's file), not this class, when it is not."""
        base, _, count = text.partition(":")
        try:
            return cls(int(base), int(count))
        except ValueError:  # __post_init__'s BadArgument too: a range out of bounds
            raise BadArgument(
                where,
                f"expected BASE:COUNT, an unprivileged range of host ids (e.g. "
                f"{DEFAULT_BASE}:{FULL_RANGE}), got {text!r}",
            ) from None

    def __str__(self) -> str:
        return f"{self.base}:{self.count}"

    def overlaps(self, start: int, count: int) -> bool:
        return start < self.base + self.count and self.base < start + count

    def on_disk(self, inside: int) -> int:
        """The host id a layer stores for id `inside` (unmapped ids read as nobody)."""
        return self.base + (inside if inside < self.count else OVERFLOW_ID)


def configured_range() -> IdRange:
    """The range new root stores get: `SPROUT_ID_RANGE`, else the default."""
    text = os.environ.get(ENVIRONMENT)
    if text:
        return IdRange.parse(text, ENVIRONMENT)
    return IdRange(DEFAULT_BASE, FULL_RANGE)


def check_unclaimed(ids: IdRange) -> None:
    """Refuse a range that `/etc/subuid` or `/etc/subgid` gives to a user: that user's own
    containers would share ids with every sandbox."""
    for name in SUBORDINATE_FILES:
        try:
            lines = Path(name).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            fields = line.strip().split(":")
            if len(fields) != 3 or not fields[1].isdigit() or not fields[2].isdigit():
                continue
            if ids.overlaps(int(fields[1]), int(fields[2])):
                raise BadArgument(
                    ENVIRONMENT,
                    f"the sandbox id range {ids} overlaps {name} line {number} "
                    f"({fields[0]}'s ids); set {ENVIRONMENT}=BASE:65536 to a free range",
                )


def give_to(path: str, uid: int, gid: int) -> None:
    """Make `path` and everything under it owned by `uid`:`gid`, never following a link."""
    os.lchown(path, uid, gid)
    if not os.path.isdir(path) or os.path.islink(path):
        return
    for directory, dirnames, filenames in os.walk(path):
        for name in (*dirnames, *filenames):
            os.lchown(os.path.join(directory, name), uid, gid)
