"""One rule for the content digest of a task's files, wherever sprout names something by it.

Three names hang on a task's files: the base layer's (the build-context files its COPY and
ADD steps read, `sprout.tasks.setup.base_name`), the oracle's solution
checkpoint's (the `solution/` folder put at /solution, `sprout.tasks.setup.checkpoint`) and a
task folder shipped to a Ray node (`sprout.cluster.task_ship`, whose copies on a node are kept
per digest). Each hashes its entries by this one rule:

- an entry's **name**, relative to its folder (as bytes: names need not be UTF-8);
- its **kind and permission bits**: a copy into a sandbox keeps them (COPY as Docker's does,
  /solution as `Sandbox.put` does, a shipped folder as tar does), so a script made
  executable is a changed input;
- its **data**, length first so that no two entries run together: a file's bytes, a link's
  target (never followed, so a link inside names only where it points), nothing for a
  folder or anything else (a named pipe is never opened: reading one would wait forever).

Times and owners are left out: the same files checked out on another machine, at another
time, by another user, are the same content.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Entry:
    """One file, folder or link as the rule reads it."""

    relative: str
    """Its name relative to the folder the digest is of; "." for that folder itself."""
    path: Path
    status: os.stat_result
    """Its `lstat`: a link is itself, not what it points to."""
    data: bytes
    """A file's bytes, a link's target, b"" for anything else."""


def read_entry(relative: str, path: Path) -> Entry:
    """The entry of `path`, named `relative`; OSError when it cannot be read."""
    status = os.lstat(path)
    if stat.S_ISREG(status.st_mode):
        data = path.read_bytes()
    elif stat.S_ISLNK(status.st_mode):
        data = os.fsencode(os.readlink(path))
    else:
        data = b""
    return Entry(relative, path, status, data)


def folder_entries(folder: Path) -> Iterator[Entry]:
    """Every entry of `folder` in one fixed order: the folder itself first ("." with its
    mode, no data), then each directory's entries sorted by name before those below them.
    Links are entries, never followed."""
    yield Entry(".", folder, os.lstat(folder), b"")
    for directory, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted((*dirnames, *filenames)):
            path = Path(directory, name)
            yield read_entry(path.relative_to(folder).as_posix(), path)


def entry_bytes(entry: Entry) -> bytes:
    """What the digest reads of `entry`: its name, its kind and mode, its data's length and
    its data."""
    mode = entry.status.st_mode
    return (
        os.fsencode(entry.relative)
        + b"\0"
        + f"{stat.S_IFMT(mode)}:{stat.S_IMODE(mode)}:{len(entry.data)}\0".encode()
        + entry.data
    )


class Digest:
    """A sha256 of entries, added one by one in the caller's order."""

    def __init__(self, start: bytes = b"") -> None:
        self._hash = hashlib.sha256(start)

    def add(self, entry: Entry) -> None:
        self._hash.update(entry_bytes(entry))

    def hexdigest(self, length: int) -> str:
        """The first `length` hex digits: as many as the name it goes in holds."""
        return self._hash.hexdigest()[:length]


def folder_digest(folder: Path, length: int) -> str:
    """The digest of everything under `folder` (its own name left out); OSError when an
    entry cannot be read."""
    digest = Digest()
    for entry in folder_entries(folder):
        digest.add(entry)
    return digest.hexdigest(length)
