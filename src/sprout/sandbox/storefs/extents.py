"""The bytes a tree of layer files owns on disk, and what removing trees frees.

On a filesystem that clones (btrfs; XFS with reflink) a file's extents can be shared
with files of other layers: overlayfs clones a lower file at copy-up, so a 1-byte
append to a 200 MB file stores one new block and shares the rest, and a squash across
subvolumes clones. Counting `st_blocks` there would charge the appending layer 200 MB
and report, at GC, bytes that removing it does not free. So there FIEMAP tells each
extent's place on disk and whether another file shares it, and a tree owns only its
unshared extents; removing trees also frees the shared extents that no file outside
them still holds. Elsewhere (ext4, tmpfs) nothing is shared but hard links, and
`st_blocks` is exact. Either way an inode counts only once all its links are inside.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import stat
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sprout.durable import libc

CLONING_FILESYSTEMS = {0x9123683E: "btrfs", 0x58465342: "xfs"}
"""statfs f_type magics of filesystems whose files can share extents."""
FS_IOC_FIEMAP = 0xC020660B
"""_IOWR('f', 11, struct fiemap): a 32-byte header, then 56-byte extents."""
FIEMAP_FLAG_SYNC = 0x1
"""Write the file's dirty data back before mapping it: a seal counts a layer before its
flush (`layers.flusher`), and would otherwise see a fresh append in no extent at all, or the
shared extent it is about to replace, and a layer's size would read one block short."""
FIEMAP_EXTENT_LAST = 0x1
FIEMAP_EXTENT_UNKNOWN = 0x2
"""No place on disk yet (delayed allocation): data this file alone wrote."""
FIEMAP_EXTENT_DATA_INLINE = 0x200
"""Stored in the filesystem's metadata, never shared."""
FIEMAP_EXTENT_SHARED = 0x2000
_HEADER = struct.Struct("=QQIIII")
_EXTENT = struct.Struct("=QQQQQI12x")
_BATCH = 256
"""Extents read per FIEMAP call."""

Range = tuple[int, int]
"""Physical bytes [start, end) on the filesystem."""


def clones(path: str) -> bool:
    """Whether the filesystem holding `path` can share extents between files."""
    buffer = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if libc().statfs(os.fsencode(path), buffer) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error), path)
    return struct.unpack_from("l", buffer)[0] in CLONING_FILESYSTEMS  # f_type, a C long


def _extents(fd: int) -> Iterator[tuple[int, int, int]]:
    """(physical, length, flags) of each extent of open file `fd`, in file order."""
    start = 0
    while True:
        buffer = bytearray(_HEADER.size + _EXTENT.size * _BATCH)
        _HEADER.pack_into(buffer, 0, start, 2**64 - 1 - start, FIEMAP_FLAG_SYNC, 0, _BATCH, 0)
        fcntl.ioctl(fd, FS_IOC_FIEMAP, buffer)
        mapped = _HEADER.unpack_from(buffer)[3]
        if mapped == 0:
            return
        for index in range(mapped):
            logical, physical, length, _, _, flags = _EXTENT.unpack_from(
                buffer, _HEADER.size + index * _EXTENT.size
            )
            yield physical, length, flags
            if flags & FIEMAP_EXTENT_LAST:
                return
        if mapped < _BATCH:
            return
        start = logical + length


def _file_blocks(path: str) -> tuple[int, list[Range]]:
    """Bytes of `path`'s extents no other file shares, and where its shared ones lie."""
    owned, shared = 0, []
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        for physical, length, flags in _extents(fd):
            if flags & FIEMAP_EXTENT_SHARED and not flags & (
                FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DATA_INLINE
            ):
                shared.append((physical, physical + length))
            else:
                owned += length
    finally:
        os.close(fd)
    return owned, shared


def _blocks(path: str, st: os.stat_result) -> tuple[int, list[Range]] | None:
    """`_file_blocks` of a regular file with data; None for other entries and for a file
    this process cannot open (a mode-000 file in a rootless store): its `st_blocks`."""
    if not stat.S_ISREG(st.st_mode) or not st.st_blocks:
        return None
    try:
        return _file_blocks(path)
    except OSError:
        return None


@dataclass
class _Scan:
    """What a walk over some trees found."""

    owned: int = 0
    """Bytes of inodes wholly inside the trees, in no extent another file shares."""
    shared: list[Range] = field(default_factory=list)
    """Where the shared extents of those inodes lie (merged, sorted)."""
    inodes: set[tuple[int, int]] = field(default_factory=set)
    """(device, inode) of those inodes."""


def _scan(roots: Iterable[str]) -> _Scan:
    links_seen: dict[tuple[int, int], int] = {}
    entries: dict[tuple[int, int], tuple[str, os.stat_result]] = {}
    for root in roots:
        for directory, dirnames, filenames in os.walk(root):
            for name in (*dirnames, *filenames):
                path = os.path.join(directory, name)
                st = os.lstat(path)
                key = (st.st_dev, st.st_ino)
                links_seen[key] = links_seen.get(key, 0) + 1
                entries[key] = (path, st)
    found = _Scan()
    cloning: dict[int, bool] = {}
    for key, (path, st) in entries.items():
        if not stat.S_ISDIR(st.st_mode) and links_seen[key] < st.st_nlink:
            continue  # a link outside still holds it
        found.inodes.add(key)
        if st.st_dev not in cloning:
            cloning[st.st_dev] = clones(path)
        blocks = _blocks(path, st) if cloning[st.st_dev] else None
        if blocks is None:
            found.owned += st.st_blocks * 512
        else:
            found.owned += blocks[0]
            found.shared += blocks[1]
    found.shared = _merged(found.shared)
    return found


def _merged(ranges: list[Range]) -> list[Range]:
    merged: list[Range] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _bytes_outside(ranges: list[Range], covered: list[Range]) -> int:
    """Bytes of merged `ranges` that merged `covered` does not cover."""
    total, first = 0, 0
    for start, end in ranges:
        while first < len(covered) and covered[first][1] <= start:
            first += 1
        position, index = start, first
        while index < len(covered) and covered[index][0] < end:
            total += max(0, covered[index][0] - position)
            position = max(position, covered[index][1])
            index += 1
        total += max(0, end - position)
    return total


def disk_usage(root: str) -> int:
    """Bytes the tree at `root` (a layer) owns: what removing it alone frees while every other
    file stays (a squashed layer of hard links or clones owns little beyond its
    directories)."""
    return _scan([root]).owned


def bytes_freed_by_removing(roots: list[str], others: Iterable[str] = ()) -> int:
    """Disk bytes that deleting `roots` releases: a file counts once all its links go,
    an extent once no file outside `roots` shares it. `others` are where such files
    can be (a store's other layers); walked only when `roots` share extents. Sharers
    elsewhere on the filesystem are not looked for."""
    removed = _scan(roots)
    if not removed.shared:
        return removed.owned
    kept: list[Range] = []
    for other in others:
        for directory, _dirnames, filenames in os.walk(other):
            for name in filenames:
                path = os.path.join(directory, name)
                st = os.lstat(path)
                blocks = _blocks(path, st)
                if blocks is not None and (st.st_dev, st.st_ino) not in removed.inodes:
                    kept += blocks[1]
    return removed.owned + _bytes_outside(removed.shared, _merged(kept))
