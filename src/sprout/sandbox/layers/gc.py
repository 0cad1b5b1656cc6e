"""GC of the layer store: free the layers no kept checkpoint stacks on, and sweep what
dead processes left (unsealed layers, scratch, holds, half-written temporaries).

`LayerStore.collect`, `gc` and `sweep` are the entry points; this module is their body.
A checkpoint that a live attempt or a stored run references is never lost: the run's
references are read once no other process can write (the store is locked for GC).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field

from sprout.durable import describe_processes, lock_holders, try_lock
from sprout.sandbox.errors import SandboxError, UnknownCheckpoint
from sprout.sandbox.jail.processes import process_alive
from sprout.sandbox.layers.layer_files import PRIVATE, LayerFiles, private_dir
from sprout.sandbox.layers.refs import drop_ref, ref_names
from sprout.sandbox.storefs.extents import bytes_freed_by_removing


class StoreInUse(SandboxError):
    """GC asked of a store that another process has claimed (a run, a shell, a viewer)."""

    def __init__(self, store: str, pids: list[int]) -> None:
        super().__init__(
            f"{store}: in use by {describe_processes(pids)}; GC could free layers it reads "
            "or is creating, so nothing was freed: run gc again when it has ended"
        )
        self.pids = pids


@dataclass
class Freed:
    """What `collect` or `sweep` removed (or, with `dry_run`, would remove)."""

    layers: list[str] = field(default_factory=list)
    """Sealed layers that no kept checkpoint stacks on."""
    debris: list[str] = field(default_factory=list)
    """Unsealed layers and scratch folders that processes which died left behind (the
    verifier's fork among them: hidden tests and their logs)."""
    bytes_freed: int = 0
    kept: int = 0
    """Sealed layers left."""
    missing: list[str] = field(default_factory=list)
    """Checkpoints the references named that the store no longer holds."""

    def __bool__(self) -> bool:
        return bool(self.layers or self.debris)


LOCK_TRIES = 10
"""Tries for GC's lock, 50 ms apart: a process that sweeps the store filesystem for orphaned
stores (storefs.owners) holds each store's lock for an instant, and is no user of it."""


@contextlib.contextmanager
def _collecting(store: LayerFiles) -> Iterator[None]:
    """Held while GC runs: no other process has the store claimed, none can claim it."""
    path = os.path.join(store.path, "lock")
    try:
        held = try_lock(path)
        for _ in range(LOCK_TRIES - 1):  # another process may probe the lock for an instant
            if held is not None:
                break
            time.sleep(0.05)
            held = try_lock(path)
    except OSError as error:
        raise SandboxError(f"{store.path}: cannot lock it for GC ({error.strerror})") from None
    if held is None:
        holders = lock_holders(path)
        others = [pid for pid in holders if pid != os.getpid()]
        if others or os.getpid() not in holders:
            raise StoreInUse(store.path, others)
        # Only this process's own claims: its caller chose this moment to collect.
        yield
        return
    try:
        yield
    finally:
        held.release()


def collect(
    store: LayerFiles,
    keep: Iterable[str] = (),
    *,
    references: Callable[[], Iterable[str]] | None = None,
    forgotten: Collection[str] = (),
    dry_run: bool = False,
) -> Freed:
    """`LayerStore.collect`, with the names it was told to `forget` already checked."""
    with _collecting(store):
        roots = [store.layer(i).id for i in keep]
        missing: list[str] = []
        for layer_id in sorted(set(references()) if references is not None else ()):
            (roots if _is_sealed(store, layer_id) else missing).append(layer_id)
        for name in ref_names(store.refs_dir):
            ref = store.ref(name) if name not in forgotten else None
            if ref is not None:
                roots.append(ref)
        sealed = set(store.sealed_ids())
        entries = _entries(store)  # listed before the holds: see `_debris`
        live, dead = store.live_holds()
        roots += [parent for parent in live.values() if parent is not None]
        roots += [layer_id for layer_id in live if layer_id in sealed]  # sealing now
        reachable = _reachable(store, roots, missing)
        doomed = sealed - reachable
        freed = Freed(
            layers=sorted(doomed),
            debris=[i for i in _debris(store, sealed, entries, live) if i not in doomed],
            kept=len(sealed) - len(doomed),
            missing=missing,
        )
        freed.bytes_freed = bytes_freed_by_removing(
            _disk_paths(store, freed.layers) + _disk_paths(store, freed.debris, sealed=sealed),
            _layer_folders(store),
        )
        if not dry_run:
            for name in forgotten:
                drop_ref(store.refs_dir, name)
            for layer_id in freed.layers:
                store.free(layer_id)
            _remove_debris(store, freed.debris, dead)
    return freed


def sweep(store: LayerFiles, *, dry_run: bool = False) -> Freed:
    """`LayerStore.sweep`: the debris of dead processes, nothing of a live one."""
    sealed = set(store.sealed_ids())
    entries = _entries(store)
    live, dead = store.live_holds()
    freed = Freed(debris=_debris(store, sealed, entries, live), kept=len(sealed))
    freed.bytes_freed = bytes_freed_by_removing(
        _disk_paths(store, freed.debris, sealed=sealed), _layer_folders(store)
    )
    if not dry_run:
        _remove_debris(store, freed.debris, dead)
    return freed


def _is_sealed(store: LayerFiles, layer_id: str) -> bool:
    try:
        store.layer(layer_id)
    except UnknownCheckpoint:
        return False
    return True


def _reachable(store: LayerFiles, roots: list[str], missing: list[str]) -> set[str]:
    """Every layer the checkpoints `roots` stack on, with squashed copies; a parent whose
    metadata is gone ends its chain (and is added to `missing`)."""
    reachable: set[str] = set()
    for root in roots:
        current: str | None = root
        while current is not None and current not in reachable:
            try:
                found = store.layer(current)
            except UnknownCheckpoint:
                missing.append(current)
                break
            reachable.add(current)
            if found.flat is not None:
                reachable.add(found.flat)
            current = found.parent
    return reachable


def _entries(store: LayerFiles) -> set[str]:
    """Ids with files, scratch, a subvolume or private files in the store (unsealed ones
    among them: a layer freed half-way keeps no metadata)."""
    found: set[str] = set()
    for sub in ("l", "w", "s", PRIVATE):
        with contextlib.suppress(FileNotFoundError):
            found.update(os.listdir(os.path.join(store.path, sub)))
    return {name for name in found if not name.endswith(".tmp")}


def _debris(
    store: LayerFiles, sealed: set[str], entries: set[str], live: dict[str, str | None]
) -> list[str]:
    """Ids whose unsealed files or scratch no live process owns.

    `entries` must be listed before the holds are read: a live process writes an
    unsealed layer's hold before its files, so any id listed there has its hold seen.
    A sealed layer's scratch is debris too (a process killed between sealing and
    cleaning up; the copy backend keeps a whole tree there); its files are GC's to
    judge, not the sweep's.
    """
    return sorted(
        layer_id
        for layer_id in entries
        if layer_id not in live
        and (layer_id not in sealed or os.path.lexists(store.scratch_dir(layer_id)))
    )


def _remove_debris(store: LayerFiles, debris: list[str], dead: list[str]) -> None:
    """Remove what `_debris` found and the holds of dead processes, sealed files excepted
    (`discard` checks again: a layer sealed since it was listed has its metadata by now,
    as sealing precedes dropping the hold)."""
    for layer_id in sorted({*debris, *dead}):
        with contextlib.suppress(FileNotFoundError):  # a sweep beside this one removed it
            store.discard(layer_id)
    _remove_stale_temporaries(store)


def _remove_stale_temporaries(store: LayerFiles) -> None:
    """Half-written metadata, holds and names (`write_atomically`'s NAME.PID-TID.tmp)
    of dead processes."""
    for sub in ("h", "m", "r"):
        folder = os.path.join(store.path, sub)
        for name in os.listdir(folder):
            if not name.endswith(".tmp"):
                continue
            owner = name.rsplit(".", 2)[-2].split("-")[0]
            if owner.isdigit() and not process_alive(int(owner)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, name))


def _disk_paths(
    store: LayerFiles, layer_ids: list[str], *, sealed: set[str] | None = None
) -> list[str]:
    """What holds the bytes of `layer_ids` here: their files (or subvolumes), private files
    and scratch, only the scratch of those in `sealed`; a layer linked from another store
    (`adopt`) is that store's to count."""
    paths = []
    for layer_id in layer_ids:
        files = store.diff_dir(layer_id)
        subvolume = os.path.join(store.path, "s", layer_id)
        private = private_dir(store.path, layer_id)
        if sealed is not None and layer_id in sealed:
            pass
        elif os.path.isdir(subvolume):
            paths.append(subvolume)
        elif os.path.isdir(files) and not os.path.islink(files):
            paths.append(files)
        if (sealed is None or layer_id not in sealed) and _owned(private):
            paths.append(private)
        if os.path.isdir(store.scratch_dir(layer_id)):
            paths.append(store.scratch_dir(layer_id))
    return paths


def _owned(folder: str) -> bool:
    """A folder of this store's own, not a link to an adopted layer's in another store."""
    return os.path.isdir(folder) and not os.path.islink(folder)


def _layer_folders(store: LayerFiles) -> list[str]:
    """Where files that may share extents with the layers GC removes are: every layer's
    files here (the kept ones among them), and those of layers adopted from another
    store (a turn's copy-up clones the base layer it adopted)."""
    links = os.path.join(store.path, "l")
    adopted = {
        os.path.realpath(os.path.join(links, name))
        for name in os.listdir(links)
        if os.path.islink(os.path.join(links, name))
    }
    inside = os.path.realpath(store.path) + "/"
    elsewhere = sorted(path for path in adopted if not path.startswith(inside))
    return [links, os.path.join(store.path, "s"), *elsewhere]
