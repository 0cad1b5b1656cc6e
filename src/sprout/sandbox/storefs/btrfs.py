"""sprout's own store filesystem: btrfs on a loop image, for stores whose disk cannot clone.

A turn that appends one byte to a big file of a lower layer makes overlayfs copy the
file up. Where the store's filesystem clones extents (btrfs, XFS with reflink) the
copy-up shares the file's blocks and stores one block; elsewhere (ext4) it stores the
whole file again. So, as root, a new store on a filesystem that cannot clone keeps its
layers on a filesystem sprout makes once per machine, under the machine cache:

    SPROUT_CACHE/storefs/          mode 0700: nothing in a sandbox can reach it
        btrfs.img                  a sparse image file, formatted btrfs, quotas on
        mnt/                       where it is loop-mounted (again after a reboot)
        mnt/stores/ID/             one layer store (a run's, or base layers of the cache),
                                   or the image cache, whose files are the lowest layer
        mnt/stores/ID.owner        the path of the link that uses it: a store whose link
                                   is gone (its run folder deleted) is `sprout gc`'s
        lock                       held while the image is made, mounted or grown

and the store's own path (RUN/layers, SPROUT_CACHE/bases/KEY, SPROUT_CACHE/images) becomes a
link to mnt/stores/ID, so every reader of the run folder finds its layers where they were.
Run stores and the cache's base-layer stores share one filesystem, so adopting a
base layer stays a link, and each sandbox's layer is a subvolume whose qgroup caps
its bytes (sprout.sandbox.storefs.quota). Settings (environment, read and checked in
sprout.sandbox.storefs.settings):

    SPROUT_STORE_FS     auto (the default) or off (layers stay where the store is)
    SPROUT_STORE_SIZE   the image's size when made (e.g. 64G; default: the free space
                        of the disk holding the cache, at most 256 GiB); it grows when
                        less than an eighth is free, as far as that disk allows
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import shlex
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from sprout.durable import cache_dir, file_lock
from sprout.sandbox.errors import SandboxError
from sprout.sandbox.storefs.files import FICLONE
from sprout.sandbox.storefs.owners import LINKED, note_owner, write_owner
from sprout.sandbox.storefs.quota import DiskCapSupport, disk_cap_support, mount_of
from sprout.sandbox.storefs.settings import SWITCH, Settings, settings

HOST_MARGIN = 1 << 30
"""Growing never leaves the disk under the image with less free space than this."""
COST = (
    "a one-byte append to a big file of a lower layer stores the whole file again "
    "(500 MB for a 500 MB file)"
)
"""What a store on a disk that cannot clone extents costs."""


@dataclass(frozen=True)
class CloneSupport:
    """Whether the filesystem under a path clones extents (FICLONE), and what it is."""

    clones: bool
    detail: str


@dataclass(frozen=True)
class Placement:
    """Where a store at some path keeps its layers, and what that costs."""

    clone: CloneSupport
    own_fs: bool
    """The layers are (or, for a new store, would be) on sprout's store filesystem."""
    note: str
    """What the user should know ('' when the store's own filesystem clones)."""
    said_in_run: bool = False
    """A run should say `note` as it starts: rootless, nothing can be done about it."""


def clone_support(path: str | os.PathLike[str]) -> CloneSupport:
    """Probe the filesystem a store at `path` would be on: clone one block between two
    scratch files in the nearest existing folder of `path`."""
    folder = os.path.realpath(path)
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    point, kind = mount_of(folder)
    where = f"{kind} at {point}"
    try:
        source_fd, source = tempfile.mkstemp(prefix=".sprout-clone-probe-", dir=folder)
    except OSError as error:
        return CloneSupport(False, f"{where}: cannot tell ({error.strerror})")
    try:
        with os.fdopen(source_fd, "wb") as source_file, open(f"{source}.2", "wb") as target:
            source_file.write(b"\0" * 4096)
            source_file.flush()
            fcntl.ioctl(target.fileno(), FICLONE, source_file.fileno())
    except OSError as error:
        if error.errno not in (errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY):
            raise
        return CloneSupport(False, f"{where} does not clone extents")
    finally:
        for scratch in (source, f"{source}.2"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(scratch)
    return CloneSupport(True, f"{where} clones extents")


def plan(path: str | os.PathLike[str]) -> Placement:
    """Where a new store at `path` would keep its layers, for this process and its settings."""
    wanted = settings()
    clone = clone_support(path)
    if clone.clones:
        return Placement(clone, False, "")
    if os.geteuid() != 0:
        rootless = "rootless, sprout cannot make a store filesystem of its own"
        return Placement(clone, False, f"{COST}; {rootless}, so layers stay there", True)
    if not wanted.enabled:
        return Placement(clone, False, f"{COST}; {SWITCH}=off keeps layers there")
    return Placement(
        clone,
        True,
        f"{COST} there, so as root sprout keeps layers on its own btrfs store filesystem "
        f"({store_fs_root()}/btrfs.img, quotas on; {SWITCH}=off keeps them there)",
    )


@dataclass(frozen=True)
class StoreHome:
    """The filesystem that holds a store's layers (or, for a new store, will): whether it
    clones extents and whether the kernel caps each sandbox's bytes there."""

    placement: Placement
    disk_cap: DiskCapSupport


def home_of(path: str | os.PathLike[str]) -> StoreHome:
    """Where the layers of the store at `path` live: a store already there (its own folder,
    or sprout's store filesystem it links into), else where a new one would go."""
    path = os.path.abspath(path)
    settings()  # checked for an existing store too, whose placement does not read them
    if os.path.isfile(os.path.join(path, "store.json")):
        real = os.path.realpath(path)
        clone = clone_support(real)
        own = LINKED.match(real) is not None
        note = ""
        if not clone.clones:
            new = plan(path)
            made_before = f"{COST}; this store was made there before sprout placed stores"
            note = made_before if new.own_fs else new.note
        return StoreHome(Placement(clone, own, note), disk_cap_support(real))
    placement = plan(path)
    if not placement.own_fs:
        return StoreHome(placement, disk_cap_support(path))
    mount_point = os.path.join(store_fs_root(), "mnt")
    if os.path.ismount(mount_point):
        cap = disk_cap_support(mount_point)
    elif shutil.which("mkfs.btrfs") is None or not _kernel_has_btrfs():
        cap = DiskCapSupport(False, "sprout's store filesystem needs btrfs-progs and btrfs")
    else:
        cap = DiskCapSupport(
            True, f"btrfs qgroups on sprout's store filesystem ({store_fs_root()}/btrfs.img, made "
            "by the first run that needs it)"
        )  # fmt: skip
    return StoreHome(placement, cap)


def _kernel_has_btrfs() -> bool:
    """Whether the kernel can mount btrfs: built in or listed, or a module it can load."""
    with open("/proc/filesystems", encoding="utf-8") as handle:
        if any(line.split()[-1:] == ["btrfs"] for line in handle):
            return True
    release = os.uname().release
    return any(
        os.path.exists(f"/lib/modules/{release}/kernel/fs/btrfs/btrfs.ko{ext}")
        for ext in ("", ".xz", ".zst", ".gz")
    )


_cost_said = False


def say_cost_once(placement: Placement | None, say: Callable[[str], None]) -> None:
    """Tell what a new store that stays on a disk that cannot clone costs (rootless: nothing
    can be done about it), once per process, whoever makes the first such store (a run
    folder prints it, the Python API warns)."""
    global _cost_said
    if placement is None or not placement.said_in_run or _cost_said:
        return
    _cost_said = True
    say(f"{placement.clone.detail}: {placement.note}")


def place_store(path: str | os.PathLike[str]) -> Placement | None:
    """Decide where a store about to be made at `path` keeps its layers; on sprout's
    store filesystem, `path` becomes a link to a new store folder there. None when a
    store (or anything) is at `path` already."""
    path = os.path.abspath(path)
    if os.path.lexists(path):
        return None
    placement = plan(path)
    if not placement.own_fs:
        return placement
    stores = os.path.join(mount(), "stores")
    os.makedirs(stores, exist_ok=True)
    target = os.path.join(stores, secrets.token_hex(8))
    os.mkdir(target)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.symlink(target, path)
    except FileExistsError:  # another process made this store first
        os.rmdir(target)
        return placement
    write_owner(target, path)
    return placement


def settle(path: str, *, new: bool) -> tuple[Placement | None, str | None]:
    """Open the store at `path` where it keeps its layers: a new one (with `new`) placed as a
    run's is, what leaving it on a disk that cannot clone costs said once as a warning (the
    Python API's stores; a run folder prints it); (its placement, None when it was there
    already, and the mount point of the store filesystem holding its layers, None for a
    plain store). A store opened through a new link notes that link as its owner."""
    placement = place_store(path) if new else None
    say_cost_once(placement, lambda cost: warnings.warn(f"sprout: {cost}", RuntimeWarning, 4))
    mount_point = mount_point_of(path)
    if mount_point is not None and os.path.islink(path):
        note_owner(path)
    return placement, mount_point


def move_command(path: str | os.PathLike[str]) -> str | None:
    """The shell line that moves the folder at `path` (made before sprout placed such
    folders, e.g. an image cache) onto the store filesystem, where a new one would go; None
    when it is there, missing, or would stay where it is. sprout never moves it itself: a
    sandbox running over it meanwhile would see its lower layer change under it."""
    path = os.path.abspath(path)
    if os.path.islink(path) or not os.path.isdir(path) or not plan(path).own_fs:
        return None
    mount_point = os.path.join(store_fs_root(), "mnt")
    target = os.path.join(mount_point, "stores", os.path.basename(path))
    point, stores, old = (shlex.quote(p) for p in (mount_point, os.path.dirname(target), path))
    new, aside = shlex.quote(target), shlex.quote(f"{path}.plain")
    return (
        f"mountpoint -q {point} && mkdir -p {stores} && cp -aT {old} {new} && "
        f"mv {old} {aside} && ln -s {new} {old} && rm -rf {aside}"
    )


def store_fs_root() -> str:
    """The folder of the machine's store filesystem (see the module's docstring)."""
    return os.path.join(cache_dir(), "storefs")


def mount(root: str | None = None) -> str:
    """Make (once), mount (when it is not) and return the mount point of the store
    filesystem under `root` (default: the machine cache's)."""
    wanted = settings()  # checked even when the image exists: a typo is never silent
    root = root or store_fs_root()
    mount_point = os.path.join(root, "mnt")
    if os.path.ismount(mount_point):
        return mount_point
    os.makedirs(root, mode=0o700, exist_ok=True)
    os.chmod(root, 0o700)  # the image holds every run's layers: no sandbox may read it
    with file_lock(os.path.join(root, "lock")):
        if os.path.ismount(mount_point):
            return mount_point
        image = os.path.join(root, "btrfs.img")
        if not os.path.exists(image):
            _make_image(image, wanted)
        os.makedirs(mount_point, exist_ok=True)
        _run(["mount", "-o", "loop", image, mount_point])
        if not disk_cap_support(mount_point).enforced:
            _run(["btrfs", "quota", "enable", mount_point])
    return mount_point


def _make_image(image: str, wanted: Settings) -> None:
    """A sparse image file of the size `wanted`, formatted btrfs."""
    free = os.statvfs(os.path.dirname(image))
    size = wanted.image_size(free.f_bavail * free.f_frsize)
    temporary = f"{image}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)
    try:
        _run(["mkfs.btrfs", "-q", "-f", temporary])
    except BaseException:
        os.unlink(temporary)
        raise
    os.rename(temporary, image)


def _run(argv: list[str]) -> str:
    """Run a btrfs-progs or util-linux tool; SandboxError naming it when it fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise SandboxError(
            f"{argv[0]}: not found; sprout's store filesystem needs btrfs-progs and "
            f"util-linux (or set {SWITCH}=off)"
        ) from None
    if done.returncode != 0:
        raise SandboxError(
            f"{' '.join(argv)}: {done.stderr.strip() or f'exit {done.returncode}'} "
            f"(set {SWITCH}=off to keep layers on the plain filesystem)"
        )
    return done.stdout


def mount_point_of(store_path: str) -> str | None:
    """The mount point of the store filesystem that the store at `store_path` keeps its
    layers on (mounting it when a reboot left it unmounted), or None for a plain store."""
    found = LINKED.match(os.path.realpath(store_path))
    if found is None:
        return None
    mount_point = found.group(1)
    if os.geteuid() != 0 and not os.access(os.path.dirname(mount_point), os.X_OK):
        raise SandboxError(
            f"{store_path}: its layers are on sprout's store filesystem {mount_point}, which "
            "only root can read (a store made as root): open it as root"
        )
    if not os.path.ismount(mount_point):
        if os.geteuid() != 0:
            raise SandboxError(
                f"{store_path}: its layers are on sprout's store filesystem {mount_point}, "
                "which is not mounted; run sprout as root once to mount it"
            )
        mount(os.path.dirname(mount_point))
    return mount_point


def keep_room(mount_point: str) -> None:
    """Grow the store filesystem at `mount_point` when less than an eighth of it is free:
    double the image (sparse), as far as the disk under it leaves HOST_MARGIN free."""
    fs = os.statvfs(mount_point)
    size = fs.f_blocks * fs.f_frsize
    if fs.f_bavail * fs.f_frsize >= size // 8:
        return
    root = os.path.dirname(mount_point)
    image = os.path.join(root, "btrfs.img")
    with file_lock(os.path.join(root, "lock")):
        fs = os.statvfs(mount_point)
        if fs.f_bavail * fs.f_frsize >= fs.f_blocks * fs.f_frsize // 8:
            return  # another process grew it
        host = os.statvfs(root)
        current = os.path.getsize(image)
        grown = min(2 * current, current + host.f_bavail * host.f_frsize - HOST_MARGIN)
        if grown <= current:
            return  # the disk under the image is full: btrfs will say ENOSPC
        os.truncate(image, grown)
        for device in _run(["losetup", "-j", image, "-O", "NAME", "-n"]).split():
            _run(["losetup", "-c", device])
        _run(["btrfs", "filesystem", "resize", "max", mount_point])
