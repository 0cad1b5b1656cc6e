"""Tasks' base layers, built once per machine and shared by every run.

A base layer (a task's set-up applied to its image) is named by the digest of
everything it depends on, so the same task on the same image is the same base
layer in every run folder. It is built in a store of the machine's cache,

    SPROUT_CACHE/bases/MODE-IDS/   a layer store (`sprout.sandbox.LayerStore`) of base layers
        users/HASH                 a run's store that links some of its layers: its path,
                                   real path and the layers lent to it
        locks/NAME                 held while base layer NAME is built

and each run's store links it (`LayerStore.adopt`) instead of building it
again. Where sprout keeps run stores on its own store filesystem, MODE-IDS is a
link into it too (`sprout.sandbox.storefs.btrfs`), so a run's link to a base layer stays
on one filesystem and a copy-up from it is a clone. Only bases over images of the
cache are shared: the `host` image and folders change under a name, an image of the
cache never does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from sprout.durable import cache_dir, file_lock, write_atomically
from sprout.sandbox import LayerStore, StoreNote, configured_range, current_user_mode

COLLECTING = ".collecting"


def bases_root() -> Path:
    return cache_dir() / "bases"


def shared_store(like: LayerStore) -> LayerStore | None:
    """The machine's store of base layers that `like` can link, or None where none can be
    shared: a copy store, or ids other than the machine's configured range."""
    if like.mode == "copy":
        return None
    if like.mode == "root":
        if like.ids != configured_range():
            return None
        key = f"root-{like.ids}".replace(":", "-")
    else:
        key = f"rootless-{os.geteuid()}"
    return LayerStore(bases_root() / key, mode=like.mode)  # placed beside run stores


@contextlib.contextmanager
def building(store: LayerStore, name: str) -> Iterator[None]:
    """Held while base layer `name` is looked up and built, so that concurrent runs (or
    workers) build it once and the others wait for it; `sprout gc` waits for it too."""
    folder = Path(store.path, "locks")
    folder.mkdir(exist_ok=True)
    with file_lock(folder / COLLECTING, shared=True), file_lock(folder / name):
        yield


@contextlib.contextmanager
def collecting(store: LayerStore) -> Iterator[None]:
    """Held while `sprout gc` collects `store`: no base layer is built or lent meanwhile."""
    folder = Path(store.path, "locks")
    folder.mkdir(exist_ok=True)
    with file_lock(folder / COLLECTING):
        yield


def shared_stores() -> list[LayerStore]:
    """Every store of base layers of the machine's cache that this process can open."""
    root = bases_root()
    if not root.is_dir():
        return []
    mode = current_user_mode()
    return [
        LayerStore(entry, mode=mode)
        for entry in sorted(root.iterdir())
        if entry.name.startswith(f"{mode}-") and (entry / "store.json").exists()
    ]


def linked_by_runs(store: LayerStore, *, forget_lost: bool = False) -> set[str]:
    """The layers of `store` that run stores link: those still on this machine (read from
    their links), and those the notes of lost stores (deleted, or moved: see
    `sprout.sandbox.StoreNote`) say they linked; with `forget_lost` those notes are
    dropped instead."""
    linked: set[str] = set()
    users = Path(store.path, "users")
    if not users.is_dir():
        return linked
    folder = os.path.join(store.path, "l")
    layer_of = {os.path.realpath(os.path.join(folder, i)): i for i in os.listdir(folder)}
    """Where each layer's files are (capped layers: their subvolume) -> its id."""
    for note in users.iterdir():
        if note.name.endswith(".tmp"):
            continue
        user, lent = _read_user(note)
        where = user.found()
        if where is None:
            if forget_lost or not lent:
                note.unlink()
            else:
                linked |= lent
            continue
        for entry in Path(where, "l").iterdir():
            if entry.is_symlink() and os.path.realpath(entry) in layer_of:
                linked.add(layer_of[os.path.realpath(entry)])
    return linked


def _read_user(note: Path) -> tuple[StoreNote, set[str]]:
    """The run store a users/ note names and the layers lent to it; a note from before
    they were noted (the store's path alone) names no layer."""
    text = note.read_text(encoding="utf-8").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return StoreNote(text, text), set()
    return StoreNote(data["store"], data["real"]), set(data["layers"])


def lend(shared: LayerStore, name: str, user: LayerStore) -> str | None:
    """Link base layer `name` of `shared` into `user`, noting `user` as one that links it
    (so `sprout gc` keeps it, even once `user` is lost until told --orphan) and when it was
    last used; None when `shared` lacks it."""
    layer_id = shared.ref(name)
    if layer_id is None:
        return None
    users = Path(shared.path, "users")
    users.mkdir(exist_ok=True)
    note = users / hashlib.sha256(user.path.encode()).hexdigest()[:20]
    Path(shared.path, "locks").mkdir(exist_ok=True)
    with file_lock(Path(shared.path, "locks", f"user-{note.name}")):
        lent = _read_user(note)[1] if note.exists() else set()
        if layer_id not in lent:
            named = StoreNote.of(user.path)
            text = json.dumps(
                {"store": named.store, "real": named.real, "layers": sorted({*lent, layer_id})}
            )
            write_atomically(str(note), text, False)
    with contextlib.suppress(OSError):
        os.utime(Path(shared.path, "r", name))  # last used: `sprout gc` keeps what is in use
    return user.adopt(shared, layer_id)
