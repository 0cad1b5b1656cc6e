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
    p/ID/             a sealed layer's private files, never mounted (layers/private.py)
    lock              flocked shared by every process that claims the store (a run folder's
                      users), exclusively by GC: GC refuses while a claim is held
    v/DIGEST/         the mask that decides what the `host` image shows (layers/hostview.py)
    s/ID/u, s/ID/w    where layers can be capped (btrfs with quotas): a subvolume per layer
                      holding its files and its overlay workdir; l/ID links to s/ID/u
                      (l/ID may also link to a layer of another store: see `adopt`)

The store's path may be a link into sprout's store filesystem (sprout.sandbox.storefs.btrfs).

A checkpoint id is a layer id. Sealing writes the metadata last, atomically: a process
killed mid-turn leaves at worst an unsealed directory (and its scratch) for `sweep` or GC,
never a half-written checkpoint. Each unsealed layer has a hold naming its owner (pid and
start time): debris is what a dead owner left; nothing of a live process is ever swept.

`LayerStore` makes, seals and collects layers over `layer_files.LayerFiles` (where each
layer's files and records are, finding and discarding them); each other job has its module
here: `store_json`, `meta` (m/), `holds` (h/), `refs` (r/), `private` (p/), `squash`,
`share` (`adopt`), `export` and `gc`; those that take the store back get its `LayerFiles`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Callable, Iterable

from sprout.durable import HeldLock, hold_lock
from sprout.sandbox.errors import BadArgument
from sprout.sandbox.jail.idmap import give_to
from sprout.sandbox.jail.modes import MODES, StoreMode
from sprout.sandbox.layers import gc as layer_gc
from sprout.sandbox.layers import share as layer_share
from sprout.sandbox.layers.export import export_path
from sprout.sandbox.layers.holds import write_hold
from sprout.sandbox.layers.hostview import HostMask
from sprout.sandbox.layers.layer_files import LayerFiles
from sprout.sandbox.layers.meta import Layer
from sprout.sandbox.layers.refs import ref_name, write_ref
from sprout.sandbox.layers.squash import squash
from sprout.sandbox.layers.whiteouts import (
    read_regular_file,
    resolve,
)
from sprout.sandbox.storefs.btrfs import keep_room, settle
from sprout.sandbox.storefs.extents import disk_usage
from sprout.sandbox.storefs.quota import create_subvolume, limit_exclusive_bytes
from sprout.sandbox.types import SandboxConfig


class LayerStore(LayerFiles):
    """Layers on disk, each with an id, a parent, its size and a reference count: the
    layers' files and records (`LayerFiles`), and what makes, seals and collects them.

    `durable` flushes each layer to disk once it is sealed, beside the next turn (the
    flush that makes a checkpoint survive a crash of the machine, not just of the
    process; `layers.flusher`): `wait_durable` says when.
    `max_stack` is how deep a stack may grow before sealing squashes it into one
    layer; ids stay valid, since the squashed copy is only used for mounting.
    `hide` names host paths (task folders, say) that the `host` image must never
    show, besides the store itself and the folder it lives in (a run's folder).
    `place=False` keeps a new store at `path`, not where a run's goes (`storefs.btrfs.place_store`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: StoreMode | None = None,
        *,
        durable: bool = True,
        max_stack: int = 100,
        hide: Iterable[str | os.PathLike[str]] = (),
        place: bool = True,
    ) -> None:
        if mode is not None and mode not in MODES:
            raise BadArgument("mode", f"expected one of {', '.join(MODES)}, got {mode!r}")
        if not isinstance(max_stack, int) or not 2 <= max_stack <= 300:
            raise BadArgument("max_stack", f"expected an int from 2 to 300, got {max_stack!r}")
        path = os.path.abspath(os.fspath(path))
        self.max_stack = max_stack
        self.placement, self.store_fs = settle(path, new=place and mode != "copy")
        """Where a new store went (None: it existed, `place` was False, or a copy store),
        and the mount point of sprout's store filesystem holding it (None: a plain store)."""
        super().__init__(path, mode, durable=durable)
        self._claim: HeldLock | None = None
        on_store_fs = () if self.store_fs is None else (os.path.dirname(self.store_fs),)
        hidden = (self.path, os.path.dirname(self.path), *on_store_fs)
        self.host = HostMask(os.path.join(self.path, "v"), hidden, self.format)
        self.host.hide(hide)
        """What the `host` image hides from this store's sandboxes (layers.hostview)."""

    def image_layers(self, config: SandboxConfig) -> list[str]:
        """Layers between a stack and its image: for `host`, the mask of what it shows."""
        if self.mode == "copy" or config.image != "host":
            return []
        if self.ids is None:
            raise BadArgument("image", '"host" needs a root store (run sprout as root)')
        return [self.host.layer(self.ids)]

    def give_to_sandbox_root(self, path: str) -> None:
        """Make files the host wrote into a layer belong to root inside, as Docker's COPY does
        (rootless and copy stores need nothing: the user is root inside already)."""
        if self.ids is not None:
            give_to(path, self.ids.base, self.ids.base)

    def cap(self, layer_id: str, limit: int) -> bool:
        """Cap the bytes unsealed layer `layer_id` may hold (0: no cap); False where the
        store's filesystem cannot enforce it."""
        subvolume = os.path.join(self.path, "s", layer_id)
        if not os.path.isdir(subvolume):
            return False
        limit_exclusive_bytes(subvolume, limit)
        return True

    def set_ref(self, name: str, layer_id: str) -> None:
        """Save checkpoint `layer_id` under `name`; GC keeps it and all it stacks on."""
        self.layer(layer_id)
        self.wait_durable(layer_id)  # a name outlives the process: never one of a lost layer
        write_ref(self.refs_dir, name, layer_id, self.durable)

    def adopt(self, source: LayerStore, layer_id: str) -> str:
        """Make checkpoint `layer_id` of `source` one of this store's by linking its layers'
        files (l/ID links to them; nothing is copied), so every store on a machine can share
        one build of a task's base layer. `source` must give sandboxes the same ids.

        GC here drops only the links; the files are `source`'s to collect.
        """
        source.wait_durable(layer_id)  # its files are on disk before this store names them
        return layer_share.adopt(self, source, layer_id)

    def read(self, layer_id: str, path: str, *, upper: str | None = None) -> bytes | None:
        """The bytes of file `path` as checkpoint `layer_id` (plus an unsealed `upper`) holds
        it, read from the layers without running anything; None when it is not a file.

        Links are followed inside the sandbox's view, as a process inside would follow
        them, so a link an agent planted never leads this host-side read out of it."""
        stack, image = self._view(layer_id)
        if upper is not None:
            stack.insert(0, self.diff_dir(upper))
        found = resolve(stack, image, path, self.format)
        if found is None or found.found is None:
            return None
        return read_regular_file(found.found)

    def export(self, layer_id: str, path: str, destination: str | os.PathLike[str]) -> bool:
        """Copy what `path` is in checkpoint `layer_id` to `destination`, a new host path: a
        file, a link, or a directory with everything under it; False when there is nothing.

        The view is the one a sandbox sees (see `export_path`); owners, modes and times
        are kept (for `COPY --from` out of a built stage)."""
        return export_path(*self._view(layer_id), self.format, path, destination)

    def _view(self, layer_id: str) -> tuple[list[str], str | None]:
        """What a sandbox on checkpoint `layer_id` sees: the layer directories, top first,
        and the image directory under them."""
        config = self.layer(layer_id).config
        stack = [self.diff_dir(i) for i in self.stack(layer_id)] + self.image_layers(config)
        return stack, self.image_root(config)

    def new_layer(self, parent: str | None, layer_id: str | None = None) -> str:
        """Start an unsealed layer on top of `parent`, held by this process until sealed;
        `layer_id` names it (a lost checkpoint rebuilt under its own id), else a new id."""
        if layer_id is None:
            layer_id = secrets.token_hex(5)
        elif os.path.lexists(self.diff_dir(layer_id)):
            raise BadArgument("layer_id", f"{layer_id}: already a layer of {self.path}")
        if self.store_fs is not None:
            keep_room(self.store_fs)
        write_hold(os.path.join(self.path, "h"), layer_id, parent)
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

    def seal(
        self, layer_id: str, parent: str | None, config: SandboxConfig, *, flush: bool = True
    ) -> Layer:
        """Make an unsealed layer an immutable checkpoint and return it; a durable store
        flushes it to disk beside the caller's next work (`wait_durable`).

        With `flush=False` the caller hands the layer to `flushes.hand_over` itself, once it
        has done what the flush would stall: on btrfs a syncfs holds the transaction that
        making the next layer's subvolume, capping it and removing the old scratch join,
        which doubled a checkpoint's time (`Sandbox.checkpoint`).

        The caller guarantees nothing can still write to it (no process
        outlives its call). Costs O(bytes the layer holds), plus one squash
        every `max_stack` layers.
        """
        diff = self.diff_dir(layer_id)
        depth = 1 if parent is None else self.layer(parent).depth + 1
        sealed = Layer(layer_id, parent, disk_usage(diff), depth, time.time(), config)
        if parent is not None and 1 + len(self.stack(parent)) > self.max_stack:
            sealed = squash(self, sealed)
        self.save_meta(sealed)  # last: a seal that fails before leaves the layer unsealed
        if flush:
            self.flushes.hand_over(sealed)
        return sealed

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
    ) -> layer_gc.Freed:
        """GC: free every sealed layer that no kept checkpoint stacks on, and the debris of
        dead processes (see `sweep`); with `dry_run`, only say what would go.

        Kept are `keep` (each must exist), the checkpoints `references()` names (read
        once no other process can write: a run's database; those already gone are
        reported in `missing`), the named checkpoints (`r/`, but not the names in
        `forget`, which go), and what open sandboxes stack on. Refuses with StoreInUse
        while another process has the store claimed.
        """
        forgotten = {ref_name(name) for name in forget}
        return layer_gc.collect(
            self, keep, references=references, forgotten=forgotten, dry_run=dry_run
        )

    def sweep(self, *, dry_run: bool = False) -> layer_gc.Freed:
        """Remove what processes that died left in the store: unsealed layers (a killed
        turn's writes, a killed verifier's fork with the hidden tests and its logs), their
        scratch folders and holds. A layer whose owner still runs is never touched, so this
        is safe beside live users of the store; a run calls it when it starts or resumes."""
        return layer_gc.sweep(self, dry_run=dry_run)
