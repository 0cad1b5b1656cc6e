"""The layer store: sealed, immutable filesystem layers on disk, and their GC.

Layout under the store's path (names are short on purpose: overlayfs takes
the whole lower-layer list in one mount option of at most one page):

    store.json        format version, mode (root, rootless or copy) and, as root, the
                      host ids the sandboxes' ids map to
    l/ID/             a layer's files, in overlayfs upper form
    m/ID.json         a sealed layer's metadata; a layer without it is unsealed
    w/ID/             scratch for an unsealed layer (overlay workdir, mountpoint)
    h/ID              a hold: an open sandbox writing unsealed layer ID
    r/NAME            a named checkpoint (e.g. a task's cached base layer), kept by GC
    lock              flocked shared by every process that claims the store (a run folder's
                      users), exclusively by GC: GC refuses while a claim is held
    v/DIGEST/         the mask that decides what the `host` image shows (sprout.sandbox.hostview)
    s/ID/u, s/ID/w    where layers can be capped (btrfs with quotas): a subvolume per layer
                      holding its files and its overlay workdir; l/ID links to s/ID/u
                      (l/ID may also link to a layer of another store: see `adopt`)

A checkpoint id is a layer id. Sealing writes the metadata last, atomically,
so a process killed mid-turn leaves at worst an unsealed directory (and its
scratch) that `sweep` or GC removes, never a half-written checkpoint. Each
unsealed layer has a hold naming its owner (pid and start time): debris is
what a dead owner left, and nothing of a live process is ever swept.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal, cast

from sprout.durable import (
    HeldLock,
    flush_tree,
    hold_lock,
    write_atomically,
)
from sprout.sandbox import layer_gc
from sprout.sandbox.errors import BadArgument, StoreModeMismatch, UnknownCheckpoint
from sprout.sandbox.files import disk_usage, place_file, remove_tree
from sprout.sandbox.hostview import mask_layer
from sprout.sandbox.idmap import IdRange, check_unclaimed, configured_range, give_to
from sprout.sandbox.layer_gc import Freed
from sprout.sandbox.layer_gc import StoreInUse as StoreInUse  # re-exported: callers import it here
from sprout.sandbox.layerfmt import (
    LayerFormat,
    MarkerFormat,
    OverlayFormat,
    lookup,
    merge,
    names_below,
    read_regular_file,
    resolve,
)
from sprout.sandbox.processes import process_start
from sprout.sandbox.quota import create_subvolume, disk_cap_support, limit_exclusive_bytes
from sprout.sandbox.types import SandboxConfig

StoreMode = Literal["root", "rootless", "copy"]
STORE_FORMAT = 2
"""2: sandboxes of root stores run in a user namespace, and their layers hold mapped ids."""
MODES: tuple[StoreMode, ...] = ("root", "rootless", "copy")


@dataclass(frozen=True)
class Layer:
    """A sealed layer: one turn's writes, stacked on its parent."""

    id: str
    parent: str | None
    size: int
    """Bytes on disk, each inode counted once."""
    depth: int
    """Layers from the base layer (which has depth 1)."""
    created: float
    config: SandboxConfig
    flat: str | None = None
    """A squashed layer holding the whole stack that ends here, when one was made."""
    squash_of: str | None = None
    """On a squashed layer: the layer whose stack it holds."""
    refcount: int = 0
    """Sealed children plus open sandboxes writing on top (filled in by `layers()`)."""

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "parent": self.parent,
            "size": self.size,
            "depth": self.depth,
            "created": self.created,
            "config": self.config.to_json(),
            "flat": self.flat,
            "squash_of": self.squash_of,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Layer:
        return cls(
            id=str(data["id"]),
            parent=cast("str | None", data["parent"]),
            size=int(cast(int, data["size"])),
            depth=int(cast(int, data["depth"])),
            created=float(cast(float, data["created"])),
            config=SandboxConfig.from_json(cast("dict[str, object]", data["config"])),
            flat=cast("str | None", data.get("flat")),
            squash_of=cast("str | None", data.get("squash_of")),
        )


def current_user_mode() -> StoreMode:
    """The overlay mode this process can use: root mounts directly, others need a user namespace."""
    return "root" if os.geteuid() == 0 else "rootless"


class LayerStore:
    """Layers on disk, each with an id, a parent, its size and a reference count.

    `durable` fsyncs each layer's files when it is sealed (the flush that makes
    a checkpoint survive a crash of the machine, not just of the process).
    `max_stack` is how deep a stack may grow before sealing squashes it into one
    layer; ids stay valid, since the squashed copy is only used for mounting.
    `hide` names host paths (task folders, say) that the `host` image must never
    show, besides the store itself and the folder it lives in (a run's folder).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: StoreMode | None = None,
        *,
        durable: bool = True,
        max_stack: int = 100,
        hide: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        if mode is not None and mode not in MODES:
            raise BadArgument("mode", f"expected one of {', '.join(MODES)}, got {mode!r}")
        if not isinstance(max_stack, int) or not 2 <= max_stack <= 300:
            raise BadArgument("max_stack", f"expected an int from 2 to 300, got {max_stack!r}")
        self.path = os.path.abspath(os.fspath(path))
        self.durable = durable
        self.max_stack = max_stack
        self.hidden = (self.path, os.path.dirname(self.path), *(os.fspath(p) for p in hide))
        self._cache: dict[str, Layer] = {}
        self._claim: HeldLock | None = None
        self._mask: str | None = None
        self._mask_lock = threading.Lock()
        for sub in ("l", "m", "w", "h", "r"):
            os.makedirs(os.path.join(self.path, sub), exist_ok=True)
        self.ids: IdRange | None = None
        """As root: the host ids that sandbox ids 0.. are (see sprout.sandbox.idmap)."""
        self.mode = self._open_mode(mode)
        self.capped = self.mode == "root" and disk_cap_support(self.path).enforced
        """Layers are subvolumes whose bytes the kernel caps (see sprout.sandbox.quota)."""
        self.format: LayerFormat = (
            MarkerFormat()
            if self.mode == "copy"
            else OverlayFormat("trusted" if self.mode == "root" else "user")
        )

    def _open_mode(self, requested: StoreMode | None) -> StoreMode:
        meta_path = os.path.join(self.path, "store.json")
        if not os.path.exists(meta_path):
            if requested is None:
                from sprout.sandbox.backends import default_mode

                requested = default_mode()
            meta: dict[str, object] = {"format": STORE_FORMAT, "mode": requested}
            if requested == "root":
                self.ids = configured_range()
                check_unclaimed(self.ids)
                meta["ids"] = str(self.ids)
            write_atomically(meta_path, json.dumps(meta), True)
            return requested
        with open(meta_path, encoding="utf-8") as handle:
            data = json.load(handle)
        stored = data.get("mode")
        if data.get("format") not in (1, STORE_FORMAT) or stored not in MODES:
            raise StoreModeMismatch(f"{meta_path}: unknown store format {data!r}")
        if stored == "root" and data.get("format") == 1:
            raise StoreModeMismatch(
                f"{meta_path}: written by a sprout whose sandboxes ran as host root (store "
                "format 1); its layers hold host-owned files that today's user-namespace "
                "sandboxes cannot use: remove the store (or the run folder) and run again"
            )
        if stored == "root":
            self.ids = IdRange.parse(str(data.get("ids")), f"{meta_path}: ids")
        if requested is not None and requested != stored:
            raise StoreModeMismatch(
                f"{meta_path}: store was written in {stored} mode, "
                f"cannot open it in {requested} mode"
            )
        if stored != "copy" and stored != current_user_mode():
            raise StoreModeMismatch(
                f"{meta_path}: store was written in {stored} mode but this process is "
                f"{'root' if os.geteuid() == 0 else 'not root'}; open it as the user that made it"
            )
        return cast(StoreMode, stored)

    def image_root(self, config: SandboxConfig) -> str | None:
        """The directory under a stack's bottom layer (None: the copy backend has none)."""
        if self.mode == "copy":
            return None
        return "/" if config.image == "host" else config.image

    def image_layers(self, config: SandboxConfig) -> list[str]:
        """Layers between a stack and its image: for `host`, the mask of what it shows."""
        return [self.host_mask()] if self.mode != "copy" and config.image == "host" else []

    def host_mask(self) -> str:
        """The layer that decides what the `host` image shows (built once per process)."""
        with self._mask_lock:
            if self._mask is None or not os.path.isdir(self._mask):
                if self.ids is None:
                    raise BadArgument("image", '"host" needs a root store (run sprout as root)')
                self._mask = mask_layer(
                    os.path.join(self.path, "v"), self.hidden, self.ids, self.format
                )
            return self._mask

    def hide_paths(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        """Add host paths (a task's folder, say) that the `host` image must never show."""
        added = tuple(os.fspath(p) for p in paths if os.fspath(p) not in self.hidden)
        if added:
            with self._mask_lock:
                self.hidden = (*self.hidden, *added)
                self._mask = None

    def give_to_sandbox_root(self, path: str) -> None:
        """Make files the host wrote into a layer belong to root inside, as Docker's COPY does
        (rootless and copy stores need nothing: the user is root inside already)."""
        if self.ids is not None:
            give_to(path, self.ids.base, self.ids.base)

    def diff_dir(self, layer_id: str) -> str:
        """The directory holding a layer's files (sealed or not)."""
        return os.path.join(self.path, "l", layer_id)

    def scratch_dir(self, layer_id: str) -> str:
        """Scratch space of an unsealed layer: the overlay workdir and mountpoint live here."""
        return os.path.join(self.path, "w", layer_id)

    def work_dir(self, layer_id: str) -> str:
        """The overlay workdir of an unsealed layer (in its subvolume when the layer has one:
        overlayfs renames from it into the upper directory)."""
        subvolume = os.path.join(self.path, "s", layer_id)
        if os.path.isdir(subvolume):
            return os.path.join(subvolume, "w")
        return os.path.join(self.scratch_dir(layer_id), "w")

    def cap(self, layer_id: str, limit: int) -> bool:
        """Cap the bytes unsealed layer `layer_id` may hold (0: no cap); False where the
        store's filesystem cannot enforce it."""
        subvolume = os.path.join(self.path, "s", layer_id)
        if not os.path.isdir(subvolume):
            return False
        limit_exclusive_bytes(subvolume, limit)
        return True

    def layer(self, layer_id: str) -> Layer:
        """The sealed layer `layer_id`; UnknownCheckpoint when there is none."""
        cached = self._cache.get(layer_id)
        if cached is not None:
            return cached
        if not isinstance(layer_id, str) or not layer_id.isalnum():
            raise UnknownCheckpoint(str(layer_id), self.path)
        try:
            with open(os.path.join(self.path, "m", f"{layer_id}.json"), encoding="utf-8") as f:
                found = Layer.from_json(json.load(f))
        except FileNotFoundError:
            raise UnknownCheckpoint(layer_id, self.path) from None
        self._cache[layer_id] = found
        return found

    def ancestry(self, layer_id: str) -> list[str]:
        """Every layer from `layer_id` down to its base, top first."""
        chain = []
        current: str | None = layer_id
        while current is not None:
            chain.append(current)
            current = self.layer(current).parent
        return chain

    def stack(self, layer_id: str) -> list[str]:
        """The layers to mount for `layer_id`, top first, using squashed copies where made."""
        chain = []
        current: str | None = layer_id
        while current is not None:
            found = self.layer(current)
            if found.flat is not None:
                chain.append(found.flat)
                break
            chain.append(current)
            current = found.parent
        return chain

    def ref(self, name: str) -> str | None:
        """The checkpoint saved under `name`, or None (also when GC or a crash lost it)."""
        try:
            with open(os.path.join(self.path, "r", _ref_name(name)), encoding="ascii") as handle:
                layer_id = handle.read().strip()
        except FileNotFoundError:
            return None
        try:
            return self.layer(layer_id).id
        except UnknownCheckpoint:
            return None

    def set_ref(self, name: str, layer_id: str) -> None:
        """Save checkpoint `layer_id` under `name`; GC keeps it and all it stacks on."""
        self.layer(layer_id)
        write_atomically(os.path.join(self.path, "r", _ref_name(name)), layer_id, self.durable)

    def adopt(self, source: LayerStore, layer_id: str) -> str:
        """Make checkpoint `layer_id` of `source` one of this store's by linking its layers'
        files (l/ID links to them; nothing is copied), so every store on a machine can share
        one build of a task's base layer. `source` must give sandboxes the same ids.

        GC here drops only the links; the files are `source`'s to collect.
        """
        if self.mode == "copy" or (source.mode, source.ids) != (self.mode, self.ids):
            raise BadArgument(
                "source", f"{source.path}: layers of a {source.mode} store with ids "
                f"{source.ids} cannot be shared with a {self.mode} store with ids {self.ids}"
            )  # fmt: skip
        wanted: list[str] = []
        for layer_id_below in source.ancestry(layer_id):
            wanted.append(layer_id_below)
            flat = source.layer(layer_id_below).flat
            if flat is not None:
                wanted.append(flat)
        for shared in reversed(wanted):  # bottom first: a layer is sealed after its parent
            if os.path.exists(os.path.join(self.path, "m", f"{shared}.json")):
                continue
            link = self.diff_dir(shared)
            if not os.path.lexists(link):
                os.symlink(os.path.realpath(source.diff_dir(shared)), link)
            self._write_meta(source.layer(shared))
        return layer_id

    def read(self, layer_id: str, path: str, *, upper: str | None = None) -> bytes | None:
        """The bytes of file `path` as checkpoint `layer_id` (plus an unsealed `upper`) holds
        it, read from the layers without running anything; None when it is not a file.

        Links are followed inside the sandbox's view, as a process inside would follow
        them, so a link an agent planted never leads this host-side read out of it."""
        config = self.layer(layer_id).config
        stack = [self.diff_dir(i) for i in self.stack(layer_id)] + self.image_layers(config)
        if upper is not None:
            stack.insert(0, self.diff_dir(upper))
        found = resolve(stack, self.image_root(config), path, self.format)
        if found is None or found.found is None:
            return None
        return read_regular_file(found.found)

    def export(self, layer_id: str, path: str, destination: str | os.PathLike[str]) -> bool:
        """Copy what `path` is in checkpoint `layer_id` to `destination`, a new host path: a
        file, a link, or a directory with everything under it; False when there is nothing.

        The view is the one a sandbox sees: whiteouts and opaque directories hide what
        lies below them, and links on the way to `path` are followed inside the view,
        never on the host; links under `path` are copied as links, not followed. Owners,
        modes and times are kept (for `COPY --from` out of a built stage)."""
        config = self.layer(layer_id).config
        stack = [self.diff_dir(i) for i in self.stack(layer_id)] + self.image_layers(config)
        image = self.image_root(config)
        found = resolve(stack, image, path, self.format)
        if found is None or found.found is None:
            return False
        pending = [("/".join(found.parts), found.found, os.fspath(destination))]
        directories: list[tuple[str, str]] = []
        while pending:
            rel, entry, target = pending.pop()
            st = os.lstat(entry)
            if not stat.S_ISDIR(st.st_mode):
                place_file(entry, target, link=False)
                continue
            os.mkdir(target)
            directories.append((entry, target))
            for name in sorted(names_below(stack, image, rel, self.format)):
                child = f"{rel}/{name}" if rel else name
                below = lookup(stack, image, child, self.format)
                if below is not None:
                    pending.append((child, below, os.path.join(target, name)))
        for entry, target in reversed(directories):  # after their contents, for the times
            st = os.lstat(entry)
            os.chmod(target, stat.S_IMODE(st.st_mode))
            with contextlib.suppress(PermissionError):
                os.lchown(target, st.st_uid, st.st_gid)
            os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        return True

    def new_layer(self, parent: str | None) -> str:
        """Start an unsealed layer on top of `parent`, held by this process until sealed."""
        layer_id = secrets.token_hex(5)
        hold = {"pid": os.getpid(), "start": process_start(os.getpid()), "parent": parent}
        write_atomically(os.path.join(self.path, "h", layer_id), json.dumps(hold), False)
        if self.capped:
            subvolumes = os.path.join(self.path, "s")
            os.makedirs(subvolumes, exist_ok=True)
            create_subvolume(subvolumes, layer_id)
            files = os.path.join(subvolumes, layer_id, "u")
            os.mkdir(files)
            os.mkdir(os.path.join(subvolumes, layer_id, "w"))
            os.symlink(os.path.join("..", "s", layer_id, "u"), self.diff_dir(layer_id))
        else:
            files = self.diff_dir(layer_id)
            os.mkdir(files)
        self.give_to_sandbox_root(files)  # the root directory inside
        return layer_id

    def _remove_files(self, layer_id: str) -> None:
        """Delete a layer's files (and its subvolume, where it has one)."""
        files = self.diff_dir(layer_id)
        if os.path.islink(files):
            remove_tree(os.path.join(self.path, "s", layer_id))
            os.unlink(files)
        else:
            remove_tree(files)

    def discard(self, layer_id: str) -> None:
        """Drop an unsealed layer and its hold (a sealed layer is left to GC)."""
        if not os.path.exists(os.path.join(self.path, "m", f"{layer_id}.json")):
            self._remove_files(layer_id)
        remove_tree(self.scratch_dir(layer_id))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.path, "h", layer_id))

    def seal(self, layer_id: str, parent: str | None, config: SandboxConfig) -> Layer:
        """Make an unsealed layer an immutable checkpoint and return it.

        The caller guarantees nothing can still write to it (no process
        outlives its call). Costs O(bytes the layer holds), plus one squash
        every `max_stack` layers.
        """
        diff = self.diff_dir(layer_id)
        if self.durable:
            flush_tree(diff)
        depth = 1 if parent is None else self.layer(parent).depth + 1
        sealed = Layer(layer_id, parent, disk_usage(diff), depth, time.time(), config)
        self._write_meta(sealed)
        if len(self.stack(layer_id)) > self.max_stack:
            sealed = self._squash(sealed)
        return sealed

    def _write_meta(self, layer: Layer) -> None:
        path = os.path.join(self.path, "m", f"{layer.id}.json")
        write_atomically(path, json.dumps(layer.to_json()), self.durable)
        self._cache[layer.id] = layer

    def _squash(self, layer: Layer) -> Layer:
        """Merge the stack under `layer` into one new layer, hard-linking its files."""
        flat_id = secrets.token_hex(5)
        flat_dir = self.diff_dir(flat_id)
        os.mkdir(flat_dir)
        layers = [self.diff_dir(i) for i in self.stack(layer.id)]
        merge(
            layers,
            flat_dir,
            self.format,
            keep_markers=True,
            link_files=True,
            image=self.image_root(layer.config),
        )
        if self.durable:
            # Hard links need no flush; a squash across subvolumes clones instead.
            flush_tree(flat_dir, files=self.capped)
        flat = Layer(
            flat_id, None, disk_usage(flat_dir), 1, time.time(), layer.config, squash_of=layer.id
        )
        self._write_meta(flat)
        updated = replace(layer, flat=flat_id)
        self._write_meta(updated)
        return updated

    def _live_holds(self) -> tuple[dict[str, str | None], list[str]]:
        """Holds of live processes (layer id -> parent), and the layers of dead ones."""
        live: dict[str, str | None] = {}
        dead: list[str] = []
        hold_dir = os.path.join(self.path, "h")
        for name in os.listdir(hold_dir):
            if name.endswith(".tmp"):
                continue
            try:
                with open(os.path.join(hold_dir, name), encoding="utf-8") as handle:
                    hold = json.load(handle)
            except (OSError, ValueError):
                continue
            running = hold.get("start") is not None
            if running and process_start(hold["pid"]) == hold["start"]:
                live[name] = hold.get("parent")
            else:
                dead.append(name)
        return live, dead

    def _sealed_ids(self) -> list[str]:
        return [n[:-5] for n in os.listdir(os.path.join(self.path, "m")) if n.endswith(".json")]

    def layers(self) -> list[Layer]:
        """Every sealed layer, with its reference count filled in."""
        found = [self.layer(i) for i in self._sealed_ids()]
        counts: dict[str, int] = {}
        for item in found:
            if item.parent is not None:
                counts[item.parent] = counts.get(item.parent, 0) + 1
        for parent in self._live_holds()[0].values():
            if parent is not None:
                counts[parent] = counts.get(parent, 0) + 1
        return sorted(
            (replace(item, refcount=counts.get(item.id, 0)) for item in found),
            key=lambda item: (item.created, item.id),
        )

    def claim(self) -> None:
        """Hold the store for this process until `release()` (or its end): GC in another
        process refuses while any claim is held, and a claim waits for a GC under way."""
        if self._claim is None:
            with contextlib.suppress(OSError):  # a read-only store: no GC can run there either
                self._claim = hold_lock(os.path.join(self.path, "lock"), shared=True)

    def release(self) -> None:
        """Let go of `claim()`."""
        if self._claim is not None:
            self._claim.release()
            self._claim = None

    def gc(self, keep: Iterable[str] = ()) -> int:
        """Free every layer that neither `keep` nor an open sandbox stacks on; return bytes freed.

        Layers under a kept id (its ancestors and their squashed copies) are
        kept too, so every kept checkpoint can still be forked and diffed.
        """
        return self.collect(keep).bytes_freed

    def collect(
        self,
        keep: Iterable[str] = (),
        *,
        references: Callable[[], Iterable[str]] | None = None,
        forget: Iterable[str] = (),
        dry_run: bool = False,
    ) -> Freed:
        """GC: free every sealed layer that no kept checkpoint stacks on, and the debris of
        dead processes (see `sweep`); with `dry_run`, only say what would go.

        Kept are `keep` (each must exist), the checkpoints `references()` names (read
        once no other process can write: a run's database; those already gone are
        reported in `missing`), the named checkpoints (`r/`, but not the names in
        `forget`, which go), and what open sandboxes stack on. Refuses with StoreInUse
        while another process has the store claimed.
        """
        forgotten = {_ref_name(name) for name in forget}
        return layer_gc.collect(
            self, keep, references=references, forgotten=forgotten, dry_run=dry_run
        )

    def sweep(self, *, dry_run: bool = False) -> Freed:
        """Remove what processes that died left in the store: unsealed layers (a killed
        turn's writes, a killed verifier's fork with the hidden tests and its logs), their
        scratch folders and holds. A layer whose owner still runs is never touched, so this
        is safe beside live users of the store; a run calls it when it starts or resumes."""
        return layer_gc.sweep(self, dry_run=dry_run)


def _ref_name(name: str) -> str:
    if not name or not all(c.isalnum() or c in "._-" for c in name) or name.startswith("."):
        raise BadArgument("name", f"{name!r}: use letters, digits, '.', '_' and '-'")
    return name
