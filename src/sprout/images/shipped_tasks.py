"""Task folders that `sprout run --ray` shipped to this machine, in its cache: the hold of
each process that uses a copy, and `sprout gc` freeing the copies nobody uses.

    SPROUT_CACHE/shipped-tasks/DIGEST/NAME   one unpacked copy per content digest
        .DIGEST-SUFFIX                       a copy being unpacked (or a killed unpacker's)
        locks/DIGEST                         held, shared, by every process that uses DIGEST
        locks/.collecting                    held by `sprout gc`; shared while a copy is taken

A copy is taken (found or unpacked, then held) only under the shared `.collecting` lock,
and gc removes a copy, and its lock file, only under the exclusive one and the copy's own:
so no process can wait on a lock file gc deletes, nor find a copy gc is deleting. The
copies are opaque folders here (`sprout.cluster.task_ship` packs and reads them); this module
needs no Ray, so `sprout gc` runs where Ray is not installed.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sprout.durable import (
    HeldLock,
    cache_dir,
    describe_processes,
    file_lock,
    hold_lock,
    lock_holders,
    try_lock,
)
from sprout.sandbox import bytes_freed_by_removing, remove_tree

SHIPPED = "shipped-tasks"
"""The folder of the machine's cache that holds the copies."""
COLLECTING = ".collecting"
DIGEST = re.compile(r"[0-9a-f]{32}")
"""A copy's folder name (`task_ship.pack`'s digest): anything else in the folder is not
gc's to free."""
HALF_UNPACKED = re.compile(r"\.[0-9a-f]{32}-.+")
"""The temporary folder a copy is unpacked into before it is renamed into place."""

_held: dict[str, HeldLock] = {}
"""Lock file -> this process's hold on it: a copy stays held until the process ends (a
Ray actor is a process of its own, and uses its task's copy all its life)."""
_holding = threading.Lock()


def shipped_root() -> Path:
    """Where the copies are, whether or not any was ever unpacked here."""
    return cache_dir() / SHIPPED


@contextlib.contextmanager
def taking(root: Path, digest: str) -> Iterator[None]:
    """Held while copy `digest` under `root` is looked for and unpacked (gc waits for it);
    when the block ends well, the copy is held for the rest of this process, so gc never
    frees it under its user, and noted used now, so gc keeps it for --keep-days."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    locks = root / "locks"
    locks.mkdir(mode=0o700, exist_ok=True)
    with file_lock(locks / COLLECTING, shared=True):
        yield
        key = str(locks / digest)
        with _holding:
            if key not in _held:
                _held[key] = hold_lock(key, shared=True)
        with contextlib.suppress(OSError):  # a copy another user unpacked: its time stays
            os.utime(root / digest)


@dataclass
class ShippedCollected:
    """What `collect` freed (or, dry, would free) and what it kept, why; copies are named
    DIGEST/NAME."""

    freed: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)
    debris: list[str] = field(default_factory=list)
    """Half-unpacked copies of killed processes."""
    bytes_freed: int = 0


def collect(*, keep_days: float, dry_run: bool = False) -> ShippedCollected:
    """Free the copies that no process holds and nobody took for `keep_days`, and what
    killed unpackers left; `dry_run` only says what would go."""
    done = ShippedCollected()
    root = shipped_root()
    if not root.is_dir():
        return done
    locks = root / "locks"
    locks.mkdir(mode=0o700, exist_ok=True)
    horizon = time.time() - keep_days * 86400
    with file_lock(locks / COLLECTING):
        for entry in sorted(root.iterdir()):
            if not entry.is_dir() or entry.is_symlink():
                continue
            if DIGEST.fullmatch(entry.name):
                _collect_copy(entry, locks / entry.name, horizon, dry_run, done)
            elif HALF_UNPACKED.fullmatch(entry.name):
                # nobody unpacks while gc holds `.collecting`: a process killed mid-way
                _free(entry, dry_run, done)
                done.debris.append(entry.name)
    return done


def _collect_copy(
    copy: Path, lock: Path, horizon: float, dry_run: bool, done: ShippedCollected
) -> None:
    """Free `copy` unless a process holds it or it was taken after `horizon`."""
    name = f"{copy.name}/{','.join(sorted(os.listdir(copy)))}"
    held = try_lock(lock)
    if held is None:
        done.kept[name] = f"in use by {describe_processes(lock_holders(lock))}"
        return
    try:
        used = copy.stat().st_mtime
        if used >= horizon:
            done.kept[name] = f"used {(time.time() - used) / 86400:.1f} days ago"
            return
        _free(copy, dry_run, done)
        if not dry_run:
            lock.unlink(missing_ok=True)
        done.freed.append(name)
    finally:
        held.release()


def _free(folder: Path, dry_run: bool, done: ShippedCollected) -> None:
    done.bytes_freed += bytes_freed_by_removing([str(folder)])
    if not dry_run:
        remove_tree(str(folder))
