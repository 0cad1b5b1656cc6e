"""Which link uses each store of sprout's store filesystem, and the stores no link does.

A store folder `mnt/stores/ID` of the store filesystem (`sprout.sandbox.storefs.btrfs`)
is reached through a link, a run folder's `layers/` say; beside it, `ID.owner`
names that link. It is how `sprout gc` finds the run of a store given by its real
path, and the stores whose link is gone (a run folder deleted, or moved and not
opened since): orphans, which only `sprout gc --orphan` frees. A store opened
through a new link (its run folder moved) takes that link as its owner.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass

from sprout.durable import try_lock, write_atomically
from sprout.sandbox.storefs.extents import bytes_freed_by_removing
from sprout.sandbox.storefs.files import remove_tree

LINKED = re.compile(r"^(/.*/storefs/mnt)/stores/[0-9a-f]+$")
"""What a store's link into a store filesystem looks like: the mount point, then the store."""
OWNER = ".owner"
"""Beside each store folder of the store filesystem: the path of the link that uses it."""


@dataclass(frozen=True)
class Orphan:
    """A store folder whose link is gone (its run folder deleted): nothing can reach it."""

    path: str
    owner: str
    bytes: int


def orphan_stores(root: str) -> list[Orphan]:
    """The stores of the (mounted) store filesystem under `root` (`btrfs.store_fs_root()`)
    whose owning link no longer leads to them. A store without an owner note is kept."""
    mount_point = os.path.join(root, "mnt")
    stores = os.path.join(mount_point, "stores")
    if not os.path.ismount(mount_point) or not os.path.isdir(stores):
        return []
    found = []
    for name in sorted(os.listdir(stores)):
        target = os.path.join(stores, name)
        if name.endswith(OWNER) or not os.path.isdir(target):
            continue
        owner = _noted_owner(target)
        if owner is None or _leads_to(owner, target):
            continue
        found.append(Orphan(target, owner, bytes_freed_by_removing([target])))
    return found


def store_owner(path: str | os.PathLike[str]) -> str | None:
    """The link that uses the store at `path` (a store folder of a store filesystem, given
    by its real path or through any link), when the owner note names one that still leads
    to it; None for a plain store, or one whose link is gone (deleted, or moved with its run
    folder and not opened since)."""
    target = os.path.realpath(path)
    owner = _noted_owner(target) if LINKED.match(target) else None
    return owner if owner is not None and _leads_to(owner, target) else None


def _noted_owner(target: str) -> str | None:
    try:
        with open(f"{target}{OWNER}", encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _leads_to(link: str, target: str) -> bool:
    return os.path.islink(link) and os.path.realpath(link) == os.path.realpath(target)


def note_owner(link: str) -> None:
    """Make the link `link`, through which a store of a store filesystem was just opened,
    its owner when the noted one no longer leads to it (its run folder was moved): so
    `sprout gc` finds the run beside it again and never takes the store for an orphan."""
    target = os.path.realpath(link)
    if os.geteuid() != 0 or store_owner(target) is not None:
        return
    with contextlib.suppress(OSError):
        write_atomically(f"{target}{OWNER}", link, durable=True)


def remove_orphan_store(orphan: Orphan) -> bool:
    """Delete an orphaned store unless a process has it open (its lock held); True when
    deleted."""
    lock = try_lock(os.path.join(orphan.path, "lock"))
    if lock is None:
        return False
    try:
        remove_tree(orphan.path)
    finally:
        lock.release()
    os.unlink(f"{orphan.path}{OWNER}")
    return True


def remove_store_with_link(link: str | os.PathLike[str]) -> bool:
    """Delete the link `link` and the store of a store filesystem it owns: a temporary run
    folder's layers go with it, instead of waiting as an orphan for `sprout gc --orphan`.
    False (and nothing touched) when `link` owns no such store."""
    link = os.path.abspath(link)
    if store_owner(link) != link:
        return False
    target = os.path.realpath(link)
    os.unlink(link)
    return remove_orphan_store(Orphan(target, link, 0))


def write_owner(target: str, link: str) -> None:
    """Note `link` as the owner of the store folder `target` (durably: a store whose note
    is lost is kept, never taken for an orphan)."""
    write_atomically(f"{target}{OWNER}", link, durable=True)
