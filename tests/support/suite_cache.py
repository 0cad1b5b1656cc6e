"""The suite's own machine cache, so that root tests run on the store filesystem every root
user gets, without touching the machine's.

As root where btrfs can be made, a whole run points SPROUT_CACHE at a folder of its own
for its whole length: sprout makes its store filesystem there on first use (a small
sparse image), and every store a test makes is placed on it as a user's would be. The
machine cache's images and tools (built by `make test` before pytest starts) are linked
in, not copied. Its store filesystem is mounted without write barriers (`nobarrier`):
btrfs then no longer asks the loop device to flush its image to the disk at every fsync,
which only power loss could tell apart (a killed process loses nothing either way) and
which made the suite's seals take five times as long. At the end the suite unmounts its
store filesystem and detaches its loop device, each by its own name, and removes the
folder. A test that points SPROUT_CACHE at
a folder of its own and leaves a store filesystem mounted there has it unmounted after
it (`unmount_store_filesystems`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from sprout.durable import cache_dir
from sprout.sandbox.layers import flusher
from sprout.sandbox.storefs import btrfs
from tests.support import smollm2

LINKED_FROM_THE_MACHINE = ("images", "tools", smollm2.CACHE_FOLDER)
"""What the suite's cache shares with the machine's: built once, read by every test."""
SUITE_STORE_SIZE = "16G"
"""The suite's store filesystem when made (sparse: it takes what the tests write)."""


def store_fs_unavailable_reason() -> str | None:
    """Why this machine's tests cannot run on a store filesystem, or None."""
    if os.geteuid() != 0:
        return "not root: rootless stores stay where they are made"
    if not shutil.which("mkfs.btrfs"):
        return "mkfs.btrfs is missing (apt-get install btrfs-progs)"
    if "btrfs" not in Path("/proc/filesystems").read_text():
        subprocess.run(["modprobe", "btrfs"], capture_output=True, check=False)
        if "btrfs" not in Path("/proc/filesystems").read_text():
            return "the kernel has no btrfs"
    return None


def make_suite_cache() -> Path:
    """A new machine cache for this run, sharing the machine's images and tools."""
    machine = cache_dir()
    suite = Path(tempfile.mkdtemp(prefix="sprout-suite-cache-"))
    for name in LINKED_FROM_THE_MACHINE:
        shared = machine / name
        shared.mkdir(parents=True, exist_ok=True)
        (suite / name).symlink_to(os.path.realpath(shared))
    return suite


def mount_without_barriers() -> str:
    """Make and mount the suite's store filesystem (sprout's own `btrfs.mount`, under
    the SPROUT_CACHE the suite set), then remount it without write barriers."""
    point = btrfs.mount()
    subprocess.run(["mount", "-o", "remount,nobarrier", point], check=True)
    return point


def store_filesystems(under: Path) -> list[str]:
    """The mount points of store filesystems (`.../storefs/mnt`) under `under`."""
    inside = os.path.realpath(under).rstrip("/") + "/"
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            point = line.split()[4].replace("\\040", " ")
            if point.startswith(inside) and point.endswith("/storefs/mnt"):
                found.append(point)
    return found


def unmount_store_filesystems(under: Path) -> None:
    """Unmount every store filesystem under `under` and detach the loop device of its
    image, by their own names, once the flusher holds none of them open."""
    flusher.drain(timeout=120)
    for point in store_filesystems(under):
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], check=True)  # a straggler still in it
        image = os.path.join(os.path.dirname(point), "btrfs.img")
        attached = subprocess.run(
            ["losetup", "-j", image, "-O", "NAME", "-n"], capture_output=True, text=True
        )
        for device in attached.stdout.split():
            subprocess.run(["losetup", "-d", device], check=False)  # autoclear may beat us


def remove_suite_cache(suite: Path) -> None:
    unmount_store_filesystems(suite)
    shutil.rmtree(suite)
