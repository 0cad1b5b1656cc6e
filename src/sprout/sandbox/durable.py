"""Writing files so that they survive a crash, and measuring what deleting them frees."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import threading
from collections.abc import Iterator


def write_atomically(path: str, text: str, durable: bool) -> None:
    """Readers see the old text or the new, never a part; concurrent writers (threads or
    processes) each write a temporary file of their own, and the last rename wins."""
    temporary = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(temporary, path)
    if durable:
        fsync_directory(os.path.dirname(path))


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str], *, shared: bool = False) -> Iterator[None]:
    """Held while the block runs, between processes and between threads (each open is a lock
    of its own): how concurrent runs on a machine build a cache entry once."""
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield


def fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def flush_tree(root: str, *, files: bool = True) -> None:
    """fsync every file and directory under `root`, so a sealed layer survives a crash.

    `files=False` flushes directories only: right for a squashed layer, whose
    files are hard links to data that was flushed when its own layer was sealed.
    """
    for directory, _dirnames, filenames in os.walk(root):
        for name in filenames if files else ():
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        fsync_directory(directory)


def bytes_freed_by_removing(roots: list[str]) -> int:
    """Disk bytes that deleting `roots` releases: a file counts once all its links go."""
    links_seen: dict[int, int] = {}
    inodes: dict[int, tuple[int, int, bool]] = {}
    for root in roots:
        for directory, dirnames, filenames in os.walk(root):
            for name in (*dirnames, *filenames):
                st = os.lstat(os.path.join(directory, name))
                links_seen[st.st_ino] = links_seen.get(st.st_ino, 0) + 1
                inodes[st.st_ino] = (st.st_nlink, st.st_blocks * 512, stat.S_ISDIR(st.st_mode))
    return sum(
        size for ino, (nlink, size, is_dir) in inodes.items() if is_dir or links_seen[ino] >= nlink
    )
