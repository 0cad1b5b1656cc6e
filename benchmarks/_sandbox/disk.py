"""Files and flushes outside any sandbox: the trees the environments are made of and the
plain fsync and syncfs(2) that the durability figures are set beside."""

import ctypes
import os
import stat

import _stats as stats

ENV_FILE_BYTES = 128 * 1024
"""Environments are trees of 128 KiB files, 128 per directory (2 GB: about 15,000 files)."""


def make_tree(path: str, total: int, file_bytes: int = ENV_FILE_BYTES) -> tuple[int, int]:
    """Write `total` bytes as a tree of `file_bytes` files; return (files, bytes) written.

    The bytes are a repeated pattern (fast to write, not sparse: every block is
    really allocated), slightly different per file so no two files are equal.
    """
    pattern = (bytes(range(256)) * (file_bytes // 256 + 1))[:file_bytes]
    count = max(1, total // file_bytes)
    os.makedirs(path)
    for i in range(count):
        directory = os.path.join(path, f"d{i // 128:04d}")
        if i % 128 == 0:
            os.makedirs(directory)
        with open(os.path.join(directory, f"f{i:06d}.bin"), "wb") as handle:
            handle.write(i.to_bytes(8, "little") + pattern[8:])
    return count, count * file_bytes


def content_bytes(root: str) -> int:
    """Sum of the sizes of the regular files under `root` (what a turn's files hold)."""
    total = 0
    for directory, _dirnames, filenames in os.walk(root):
        for name in filenames:
            st = os.lstat(os.path.join(directory, name))
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def fsync_fresh_file(path: str, nbytes: int) -> float:
    """Write `nbytes` to a new file (untimed), then time one fsync of it."""
    chunk = b"x" * min(max(nbytes, 1), 1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        left = nbytes
        while left > 0:
            left -= os.write(fd, chunk[:left])
        return stats.timed(lambda: os.fsync(fd))[0]
    finally:
        os.close(fd)
        os.unlink(path)


_libc: ctypes.CDLL | None = None


def syncfs(path: str) -> float:
    """Time one syncfs(2) of the filesystem holding `path` (flushes the whole filesystem)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    libc = _libc
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        seconds, failed = stats.timed(lambda: libc.syncfs(fd))
        if failed != 0:
            raise OSError(ctypes.get_errno(), "syncfs")
        return seconds
    finally:
        os.close(fd)
