"""A cap on the bytes one sandbox's layer may hold, where the store's filesystem can enforce it.

The kernel enforces it on btrfs with quotas enabled: each unsealed layer is a
subvolume of its own (holding the overlay's upper and work directories, which
must share one), and its qgroup's limit on *exclusive* bytes stops a write
with EDQUOT. Exclusive bytes are what the turn wrote: a copy-up that btrfs
clones from a lower layer shares its extents and costs nothing.

This kernel cannot enforce a cap on ext4 (no QFMT_V2) or XFS (no XFS_QUOTA),
and sprout does not pretend to: `sprout doctor` and the run say so.
"""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import uuid
from dataclasses import dataclass

from sprout.durable import mount_entry

BTRFS_IOC_SUBVOL_CREATE = 0x5000940E
"""_IOW(0x94, 14, struct btrfs_ioctl_vol_args): 8-byte fd, 4088-byte name."""
BTRFS_IOC_QGROUP_LIMIT = 0x8030942B
"""_IOR(0x94, 43, struct btrfs_ioctl_qgroup_limit_args): qgroup id, then the limit."""
BTRFS_IOC_FS_INFO = 0x8400941F
"""_IOR(0x94, 31, struct btrfs_ioctl_fs_info_args), 1024 bytes; the fsid is bytes 16-31."""
BTRFS_QGROUP_LIMIT_MAX_EXCL = 1 << 1
BTRFS_NAME_MAX = 4087


@dataclass(frozen=True)
class DiskCapSupport:
    """Whether layers of a store at some path can be capped, and why (not)."""

    enforced: bool
    detail: str


def mount_of(path: str) -> tuple[str, str]:
    """(mount point, filesystem type) of the mount holding `path`."""
    point, kind, _ = mount_entry(path)
    return point, kind


def _btrfs_quotas_enabled(path: str) -> bool:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        info = bytearray(1024)
        fcntl.ioctl(fd, BTRFS_IOC_FS_INFO, info)
    finally:
        os.close(fd)
    fsid = uuid.UUID(bytes=bytes(info[16:32]))
    return os.path.isdir(f"/sys/fs/btrfs/{fsid}/qgroups")


def disk_cap_support(path: str) -> DiskCapSupport:
    """Can the kernel cap a layer of a store at `path`?"""
    point, kind = mount_of(path)
    if kind == "btrfs":
        existing = os.path.realpath(path)
        while not os.path.isdir(existing):
            existing = os.path.dirname(existing)
        if os.geteuid() != 0:
            return DiskCapSupport(False, f"btrfs at {point}: qgroup limits need root")
        if _btrfs_quotas_enabled(existing):
            return DiskCapSupport(True, f"btrfs qgroups at {point}: each layer a subvolume")
        return DiskCapSupport(
            False, f"btrfs at {point} without quotas (btrfs quota enable {point})"
        )
    return DiskCapSupport(
        False,
        f"{kind} at {point}: this kernel cannot cap a folder's bytes there; a store on "
        "btrfs with quotas enabled would be capped",
    )


def create_subvolume(parent: str, name: str) -> None:
    """`parent/name` as a new, empty btrfs subvolume."""
    encoded = name.encode()
    if len(encoded) > BTRFS_NAME_MAX or "/" in name:
        raise ValueError(f"subvolume name {name!r}")
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(fd, BTRFS_IOC_SUBVOL_CREATE, bytearray(struct.pack("q4088s", 0, encoded)))
    finally:
        os.close(fd)


def limit_exclusive_bytes(subvolume: str, limit: int) -> None:
    """Cap the bytes `subvolume` holds that no other subvolume shares (0 lifts the cap)."""
    flags = BTRFS_QGROUP_LIMIT_MAX_EXCL
    fd = os.open(subvolume, os.O_RDONLY | os.O_DIRECTORY)
    try:
        args = struct.pack("QQQQQQ", 0, flags, 0, limit or 2**64 - 1, 0, 0)
        fcntl.ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, args)
    finally:
        os.close(fd)


def exclusive_bytes(path: str) -> int:
    """The bytes the btrfs subvolume holding `path` owns that nothing else shares, data and
    metadata, once its transaction is committed: its qgroup's exclusive count, as btrfs
    itself reports it (what a layer of a capped store really costs the disk)."""
    synced = subprocess.run(
        ["btrfs", "qgroup", "show", "--raw", "--sync", "-f", path],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in synced.stdout.splitlines():
        fields = line.split()
        if fields and fields[0].startswith("0/"):
            return int(fields[2])
    raise OSError(f"btrfs qgroup show -f {path}: no qgroup ({synced.stderr.strip()})")
