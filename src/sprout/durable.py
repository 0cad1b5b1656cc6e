"""Writing files so that they survive a crash, the file locks that keep processes apart
(and name the holder when one is in the way), and where the machine keeps what every run
shares."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from sprout.errors import SproutError

CACHE_SETTING = "SPROUT_CACHE"


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


def append_durably(path: str, text: str) -> None:
    """`text` at the end of `path` (made if missing), on disk before this returns. One
    write, so a kill leaves at most the end of `text` cut short: a log of lines loses at
    most its last, and a reader tells it by its missing newline."""
    created = not os.path.exists(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_directory(os.path.dirname(path) or ".")


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str], *, shared: bool = False) -> Iterator[None]:
    """Held while the block runs, between processes and between threads (each open is a lock
    of its own): how concurrent runs on a machine build a cache entry once."""
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield


def _fsync(path: str, flags: int) -> None:
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(path: str) -> None:
    _fsync(path, os.O_DIRECTORY)


def fsync_file(path: str) -> None:
    """fsync the file at `path` (not a link's target: a link fails with ELOOP)."""
    _fsync(path, os.O_NOFOLLOW)


def flush_tree(root: str, *, files: bool = True) -> None:
    """fsync every file and directory under `root`, so a sealed layer survives a crash.

    `files=False` flushes directories only: right for a squashed layer, whose
    files are hard links to data that was flushed when its own layer was sealed.
    """
    for directory, _dirnames, filenames in os.walk(root):
        for name in filenames if files else ():
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                fsync_file(path)
        fsync_directory(directory)


@functools.cache
def libc() -> ctypes.CDLL:
    """The C library, loaded once (a load is about 0.1 ms: sealing a layer asks it each time)."""
    return ctypes.CDLL(None, use_errno=True)


def syncfs(fd: int) -> bool:
    """Write back everything of the filesystem holding open file `fd` (syncfs(2)): one call
    in place of an fsync per file. False where the C library or the kernel has none (the
    caller fsyncs file by file instead); OSError when the write-back failed (EIO, ENOSPC:
    since Linux 5.8, any write-back error of the filesystem not reported through `fd` yet,
    whichever file it hit)."""
    function = getattr(libc(), "syncfs", None)
    if function is None:
        return False
    if function(fd) != 0:
        code = ctypes.get_errno()
        if code == errno.ENOSYS:
            return False
        raise OSError(code, os.strerror(code))
    return True


class HeldLock:
    """An flock taken by `try_lock` or `hold_lock`: held until `release()` or the process ends
    (a killed process drops it, so no lock outlives its holder)."""

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _open_lock_file(path: str) -> int:
    """A descriptor to flock `path` with, created if missing; read-only where the folder is
    (flock needs no write access)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except PermissionError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as error:
        if error.errno != errno.EROFS:
            raise
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def try_lock(path: str | os.PathLike[str], *, shared: bool = False) -> HeldLock | None:
    """Take the flock on `path` without waiting; None when another open of it holds a lock
    that conflicts (another process's, or another open in this one)."""
    fd = _open_lock_file(os.fspath(path))
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return HeldLock(os.fspath(path), fd)


def hold_lock(path: str | os.PathLike[str], *, shared: bool = False) -> HeldLock:
    """Take the flock on `path`, waiting for conflicting holders to let go."""
    fd = _open_lock_file(os.fspath(path))
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return HeldLock(os.fspath(path), fd)


def lock_holders(
    path: str | os.PathLike[str], *, kind: str = "FLOCK", write_at: int | None = None
) -> list[int]:
    """The pids holding a lock of `kind` (FLOCK, or POSIX: SQLite's) on file `path`, read
    from /proc/locks; with `write_at`, only write locks covering that byte. Empty when
    /proc/locks cannot tell (no file, another kernel), so use it to name holders, not to
    decide whether there are any."""
    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    devices = {f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"}
    with contextlib.suppress(OSError):  # btrfs: a subvolume's files stat as a device of their
        major, minor = mount_entry(path)[2]  # own, /proc/locks names the filesystem's
        devices.add(f"{major:02x}:{minor:02x}:{st.st_ino}")
    found: set[int] = set()
    for line in lines:
        fields = line.split()
        if len(fields) < 8 or fields[1] == "->" or fields[1] != kind or fields[5] not in devices:
            continue  # "->" marks a process waiting for the lock, not holding it
        if write_at is not None:
            end = fields[7]
            if fields[3] != "WRITE" or int(fields[6]) > write_at:
                continue
            if end != "EOF" and int(end) < write_at:
                continue
        with contextlib.suppress(ValueError):
            found.add(int(fields[4]))
    return sorted(found)


def mount_entry(path: str | os.PathLike[str]) -> tuple[str, str, tuple[int, int]]:
    """(mount point, filesystem type, device as /proc/locks names it) of the mount holding
    `path` (its nearest existing folder), read from /proc/self/mountinfo."""
    real = os.path.realpath(path)
    while not os.path.exists(real):
        real = os.path.dirname(real)
    best = ("/", "unknown", (0, 0))
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            fields, _, tail = line.partition(" - ")
            words = fields.split()
            point = words[4].replace("\\040", " ")
            inside = real == point or real.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= len(best[0]):
                major, minor = words[2].split(":")
                best = (point, tail.split()[0], (int(major), int(minor)))
    return best


def describe_processes(pids: list[int]) -> str:
    """'sprout process 1234 (sprout run tasks --out r)' for each pid: what a message names
    when another process holds something this one needs."""
    if not pids:
        return "another process"
    named = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                words = handle.read().decode(errors="replace").split("\0")
        except OSError:
            words = []
        words = [w for w in words if w]
        for start, word in enumerate(words):  # `python -m sprout.cli run` or `.../sprout run`
            if word == "sprout.cli" or os.path.basename(word) == "sprout":
                words = ["sprout", *words[start + 1 :]]
                break
        command = " ".join(" ".join(words).split())  # one line, whatever the arguments hold
        command = command if len(command) <= 60 else command[:57] + "..."
        kind = "sprout process" if command.startswith("sprout") else "process"
        named.append(f"{kind} {pid}" + (f" ({command})" if command else ""))
    return ", ".join(named)


class BadCacheSetting(SproutError):
    """`SPROUT_CACHE` names no place the machine's cache can be."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"{CACHE_SETTING}: {problem}", input_name=CACHE_SETTING)


def cache_dir() -> Path:
    """The machine-wide cache (`SPROUT_CACHE`, else ~/.cache/sprout): the helper, images and
    tasks' base layers, shared by every run. The setting is checked on every read: a
    relative path (`~/cache` in quotes is one) would be another cache in each folder a
    command starts in, and a file would fail later, far from the setting at fault."""
    configured = os.environ.get(CACHE_SETTING)
    if configured:
        if not os.path.isabs(configured):
            raise BadCacheSetting(f"expected an absolute path, got {configured!r}")
        if os.path.exists(configured) and not os.path.isdir(configured):
            raise BadCacheSetting(
                f"{configured} is not a folder (expected the cache's folder, or where to make it)"
            )
        return Path(configured)
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    if os.access(home.parent if not home.exists() else home, os.W_OK):
        return home / "sprout"
    return Path(tempfile.gettempdir()) / f"sprout-{os.getuid()}"
