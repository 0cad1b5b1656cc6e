"""Plain file operations on the store's disk: placing a layer's entries (hard links, reflink
clones, special files recreated), copying, and removing trees overlayfs left mode-000 (the
bytes a tree owns are `extents`'). Nothing here knows how a layer marks deletions
(`layers.whiteouts` does)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat


def remove_tree(path: str) -> None:
    """Delete a directory tree, including the mode-000 directories overlayfs leaves in its
    workdir, which an unprivileged owner must make writable before it can empty them."""

    def make_writable_and_retry(function: object, failed: str, _error: object) -> None:
        os.chmod(os.path.dirname(failed), 0o700)
        if os.path.isdir(failed) and not os.path.islink(failed):
            os.chmod(failed, 0o700)
            shutil.rmtree(failed, onerror=make_writable_and_retry)
        else:
            os.unlink(failed)

    if os.path.lexists(path):
        shutil.rmtree(path, onerror=make_writable_and_retry)


def replace_with_copy(source: str, target: str) -> None:
    """Put a copy of local file or directory `source` at `target`, removing what was there."""
    if os.path.isdir(target) and not os.path.islink(target):
        remove_tree(target)
    elif os.path.lexists(target):
        os.unlink(target)
    if os.path.isdir(source):
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target)


def remove_entry(path: str) -> None:
    """Remove whatever is at `path` (a directory tree, a file, a link), if anything."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def copy_dir_attributes(source: str, target: str, *, owner_required: bool = True) -> None:
    """Give directory `target` the mode, owner and times of `source`; without
    `owner_required`, the owner only where this process may set it (an export by a user
    other than root keeps the modes and times all the same)."""
    st = os.lstat(source)
    os.chmod(target, stat.S_IMODE(st.st_mode))
    try:
        os.chown(target, st.st_uid, st.st_gid)
    except PermissionError:
        if owner_required:
            raise
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


FICLONE = 0x40049409
"""_IOW(0x94, 9, int): share the source's blocks (btrfs, XFS) instead of copying them."""


def _clone_or_copy(source: str, destination: str) -> None:
    with open(source, "rb") as src, open(destination, "wb") as dst:
        try:
            fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
        except OSError:  # a filesystem that cannot clone (ext4, tmpfs), or two of them
            shutil.copyfileobj(src, dst)
    shutil.copystat(source, destination, follow_symlinks=False)


def place_file(source: str, destination: str, link: bool) -> None:
    """Put a non-directory entry of a layer at `destination`, keeping its owner and mode.

    `link` hard-links it; across btrfs subvolumes (where links cannot go), for a file at
    its filesystem's link limit (ext4's 65,000: a file every squash of a long attempt
    links again), or without `link`, a file is cloned where the filesystem can (sharing
    its blocks just the same) and copied only where it cannot."""
    if link:
        try:
            os.link(source, destination, follow_symlinks=False)
            return
        except OSError as error:
            if error.errno not in (errno.EXDEV, errno.EMLINK):
                raise
    st = os.lstat(source)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(source), destination)
    elif stat.S_ISREG(st.st_mode):
        _clone_or_copy(source, destination)
    else:  # fifos, sockets, devices: recreate rather than read from them
        os.mknod(destination, st.st_mode, st.st_rdev)
    # Only root can give a file away; an unprivileged copy keeps its own uid.
    with contextlib.suppress(PermissionError):
        os.lchown(destination, st.st_uid, st.st_gid)
