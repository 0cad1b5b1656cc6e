"""The run folder: `sprout.db`, `results.json`, `report.html` and `layers/`, opened together.

A process that writes a run (`sprout run`, `train`, `tasks check`) holds `sprout.lock`
exclusively, so a second writer is refused at once, naming the first; every process
that opens the folder claims its layer store, so `sprout gc` refuses while one is
open. A writer sweeps, as it starts, what killed processes left in the layer store
(unsealed layers: a killed turn's writes, a verifier's fork with the hidden tests).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sprout.durable import HeldLock, describe_processes, lock_holders, try_lock
from sprout.errors import SproutError
from sprout.sandbox import (
    Change,
    Freed,
    LayerStore,
    SandboxError,
    checkpoint_changes,
    place_store,
    say_cost_once,
    store_owner,
)
from sprout.tree import Placement, RolloutTree

WRITER_LOCK = "sprout.lock"
"""Held exclusively by the one process writing the run."""


@dataclass
class _Writer:
    lock: HeldLock
    users: int = 1
    """RunFolders of this process writing the folder (a test may open two)."""


_writers: dict[str, _Writer] = {}
"""This process's writer locks, by folder."""
_writers_lock = threading.Lock()


class RunFolderError(SproutError, ValueError):
    """A path that is not a run folder, or a checkpoint of it that this machine cannot read."""


@dataclass
class RunFolder:
    """One run's files. `create_new` starts a run, `resume` continues one, `create` does
    either (for `tasks check`), `open` reads one (a shell, the viewer, an export)."""

    path: Path
    tree: RolloutTree
    """The run's rollout tree: every read and write of sprout.db goes through it."""
    layers: LayerStore
    swept: Freed | None = None
    """What the writer's start swept out of the layer store (debris of killed runs)."""
    _writer: bool = field(default=False, repr=False)
    _closed: bool = field(default=False, repr=False)

    @classmethod
    def _of(cls, path: Path, tree: RolloutTree, layers: LayerStore, *, writer: bool) -> RunFolder:
        """The folder over an open tree and layer store; the tree reads what turns stored
        before sprout recorded their changes from the layers, and records a checkpoint
        once the layers have it on disk."""

        def read_changes(since: str, checkpoint: str) -> list[Change] | None:
            try:
                return checkpoint_changes(layers, since, checkpoint)
            except SandboxError:  # a layer freed by GC: those turns list nothing
                return None

        def settle(checkpoint: str) -> None:
            layers.wait_durable(checkpoint)

        tree.read_changes = read_changes
        tree.settle = settle  # `run_tasks` sets its sandboxes' (a Ray cluster's nodes')
        return cls(path, tree, layers, _writer=writer)

    @classmethod
    def create(cls, path: str | Path) -> RunFolder:
        """A run folder to write: a new one, or the run already in it."""
        return cls._open_for_writing(Path(path))

    @classmethod
    def create_new(cls, path: str | Path) -> RunFolder:
        """A new run folder; one that already holds a run is refused, so nothing is mixed."""

        def refuse_a_run(tree: RolloutTree) -> None:
            if tree.holds_run():
                raise RunFolderError(
                    f"{path}: already holds a run (sprout.db); pass --resume to continue it, "
                    "or choose another --out"
                )

        return cls._open_for_writing(Path(path), refuse_a_run)

    @classmethod
    def resume(cls, path: str | Path) -> RunFolder:
        """The run in `path`, to continue; a folder with no run in it is refused."""
        path = Path(path)
        nothing = f"{path}: nothing to resume"
        fix = "leave out --resume to start a new run there"
        if path.exists() and not path.is_dir():
            raise RunFolderError(f"{path}: a file, not a run folder; choose another --out")
        if not (path / "sprout.db").exists():
            raise RunFolderError(f"{nothing} (no sprout.db); {fix}")

        def need_a_run(tree: RolloutTree) -> None:
            if not tree.holds_run():
                raise RunFolderError(f"{nothing} (sprout.db holds no run); {fix}")

        return cls._open_for_writing(path, need_a_run)

    @classmethod
    def _open_for_writing(
        cls, path: Path, check: Callable[[RolloutTree], None] | None = None
    ) -> RunFolder:
        _make_folder(path)
        _take_writer_lock(path)
        tree: RolloutTree | None = None
        try:
            tree = RolloutTree(path / "sprout.db")
            tree.check_writable()
            if check is not None:
                check(tree)
            placement = place_store(path / "layers")
            layers = LayerStore(path / "layers")
            layers.claim()
            run = cls._of(path, tree, layers, writer=True)
            run.swept = layers.sweep()
        except BaseException:
            if tree is not None:
                tree.close()
            _drop_writer_lock(path)
            raise
        note = run.sweep_note()
        if note is not None:
            print(f"sprout: {note}", file=sys.stderr)
        say_cost_once(placement, lambda cost: print(f"sprout: {cost}", file=sys.stderr))
        return run

    @classmethod
    def open(cls, path: str | Path) -> RunFolder:
        """An existing run folder, to read (a shell's forks are its only writes)."""
        path = Path(path)
        layers_path = path / "layers"  # a link, where sprout's store filesystem holds them
        if not (path / "sprout.db").exists() or not (
            layers_path.is_dir() or layers_path.is_symlink()
        ):
            raise RunFolderError(f"{path}: not a run folder (needs sprout.db and layers/)")
        tree = RolloutTree(path / "sprout.db")
        try:
            layers = LayerStore(layers_path)
            layers.claim()
        except BaseException:
            tree.close()
            raise
        return cls._of(path, tree, layers, writer=False)

    def sweep_note(self) -> str | None:
        """One line saying what the start swept, or None when there was nothing."""
        swept = self.swept
        if swept is None or not swept.debris:
            return None
        count = len(swept.debris)
        return (
            f"swept {count} unsealed layer{'s' if count != 1 else ''} and work folders "
            f"({swept.bytes_freed / 1e6:.1f} MB) that killed processes left in {self.layers.path}"
        )

    def store_of(self, task_id: str, checkpoint: str) -> LayerStore:
        """The layer store holding `checkpoint` of task `task_id`: `layers/`, or for a
        `--ray` run the node store the run's meta names for the task (readable here when
        the node is this machine or the stores are on a shared filesystem), newest first.
        A RunFolderError names the node and store when none that may hold it is readable;
        UnknownCheckpoint when the readable ones lost it (freed by a gc)."""
        try:
            self.layers.layer(checkpoint)
            return self.layers
        except SandboxError as error:
            missing = error
        placed = self.placements(task_id)
        if not placed:
            raise missing
        unreadable = []
        for placement in reversed(placed):
            path = placement.store
            if not readable_store(path):
                unreadable.append(f"node {placement.node[:12]}'s store {path}")
                continue
            store = LayerStore(path)
            try:
                store.layer(checkpoint)
                return store
            except SandboxError:
                continue
        if not unreadable:
            raise missing
        raise RunFolderError(
            f"checkpoint {checkpoint} of task {task_id}: a --ray run's layer, in "
            f"{' or '.join(unreadable)}, which this machine cannot read"
        )

    def placements(self, task_id: str) -> list[Placement]:
        """Where a `--ray` run placed task `task_id`, oldest first (node, store, why); none
        for a run on this machine."""
        ray = self.tree.meta().ray
        return [] if ray is None else [p for p in ray.placements if p.task == task_id]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.tree.close()
        self.layers.release()
        if self._writer:
            _drop_writer_lock(self.path)


def _make_folder(path: Path) -> None:
    """`path` as a folder for a run: made if missing; a file, or a folder holding other
    things than a run, is refused (a run is never mixed into them)."""
    if path.exists() and not path.is_dir():
        raise RunFolderError(f"{path}: a file, not a run folder; choose another --out")
    if path.is_dir() and not (path / "sprout.db").exists():
        others = sorted(name for name in os.listdir(path) if name != WRITER_LOCK)
        if others:
            shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
            raise RunFolderError(
                f"{path}: not a run folder (no sprout.db; it holds {shown}); choose an empty "
                "or new --out"
            )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RunFolderError(
            f"{path}: cannot make the run folder ({error.strerror}); choose another --out"
        ) from None


def _take_writer_lock(path: Path) -> None:
    """Hold `path`'s writer lock (again, if this process holds it already)."""
    key = os.path.realpath(path)
    lock_path = path / WRITER_LOCK
    with _writers_lock:
        held = _writers.get(key)
        if held is not None:
            held.users += 1
            return
        try:
            lock = try_lock(lock_path)
        except OSError as error:
            raise RunFolderError(
                f"{path}: cannot be written ({error.strerror}); a run writes its folder, so "
                "make it writable or choose another --out"
            ) from None
        if lock is None:
            pids = [pid for pid in lock_holders(lock_path) if pid != os.getpid()]
            raise RunFolderError(
                f"{path}: in use by {describe_processes(pids)}, which writes this run; wait "
                "for it to end (or stop it), or choose another --out"
            )
        _writers[key] = _Writer(lock)


def _drop_writer_lock(path: Path) -> None:
    key = os.path.realpath(path)
    with _writers_lock:
        held = _writers.get(key)
        if held is None:
            return
        held.users -= 1
        if held.users <= 0:
            held.lock.release()
            del _writers[key]


def databases_of_store(path: str | os.PathLike[str]) -> list[Path]:
    """The `sprout.db` of each run whose layer store is the one at `path`: beside `path` as
    given (a run's `layers/`, a link among them), and, for a store of sprout's store
    filesystem, beside the link its owner note names (given by its real path, say). A
    store none is found for is nobody's run that this machine can tell."""
    candidates = [Path(os.path.abspath(path)).parent / "sprout.db"]
    owner = store_owner(path)
    if owner is not None:
        candidates.append(Path(owner).parent / "sprout.db")
    found: dict[str, Path] = {}
    for database in candidates:
        if database.is_file():
            found.setdefault(os.path.realpath(database), database)
    return list(found.values())


def readable_store(path: str) -> bool:
    """Whether the layer store at `path` can be read from this machine."""
    return os.path.isfile(os.path.join(path, "store.json"))
