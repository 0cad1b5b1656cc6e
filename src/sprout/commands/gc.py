"""`sprout gc`: free the machine's cache (base layers, images, shipped task folders) or a
layer store's layers."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from sprout.commands.common import UsageError
from sprout.images import shipped_tasks
from sprout.sandbox import Freed, LayerStore, UnknownCheckpoint

DESCRIPTION = (
    "Without STORE: free the base layers of the machine's cache "
    "(SPROUT_CACHE, default ~/.cache/sprout) that no run folder on this machine links and "
    "nobody used for --keep-days, the task folders sprout run --ray shipped to this "
    "machine that no running process uses and nobody used for --keep-days, with --orphan "
    "the layers of run folders deleted with rm -rf (on sprout's store filesystem), and "
    "with --images the images that neither a remaining base layer nor a run's own layer "
    "store stands on, with the pulled blobs and shared layer chains no remaining image "
    "uses. With STORE (a layer store, a link to one, or a run folder for its "
    "layers/): free every layer that no checkpoint of the run that uses it (the sprout.db "
    "beside it, or beside the link that uses it), of a --run, a named checkpoint, a --keep "
    "or an open sandbox stacks on, and what killed processes left; a store no run is found "
    "for is left whole unless given --run or --orphan. Refuses while a process uses the "
    "store (a run, a shell, the viewer)."
)
"""`sprout gc --help`'s description: what is freed with and without STORE, and what is kept."""


def add_parser(commands: Any) -> None:
    gc = commands.add_parser(
        "gc",
        help="free the machine's cache (images, base layers, shipped task folders) or a layer "
        "store's unused layers",
        description=DESCRIPTION,
    )
    gc.add_argument(
        "store", metavar="STORE", nargs="?", help="a layer store, or a run folder (its layers/)"
    )
    gc.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="RUNDIR",
        help="with STORE: also keep every checkpoint the run in RUNDIR references (repeatable)",
    )
    gc.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="ID",
        help="with STORE: a checkpoint id to keep, with all it stacks on (repeatable)",
    )
    gc.add_argument(
        "--keep-days",
        type=float,
        default=7.0,
        metavar="N",
        help="keep cached base layers and shipped task folders used in the last N days "
        "(default 7; 0: only those in use)",
    )
    gc.add_argument("--images", action="store_true", help="also remove images nothing uses")
    gc.add_argument(
        "--orphan",
        action="store_true",
        help="free what no run can be found for: with STORE, a store with no sprout.db beside "
        "it (or beside the link that uses it) and no --run; without, the stores on sprout's "
        "store filesystem whose link is gone (run folders deleted, or moved and not opened "
        "since), and what only such stores stood on. Without it those are kept and counted",
    )
    gc.add_argument(
        "--dry-run",
        action="store_true",
        help="say what would be freed (and which images and shipped task folders stay, why); "
        "free nothing",
    )
    gc.add_argument(
        "-v",
        "--list",
        action="store_true",
        help="name each layer (or base, image, shipped task folder) freed",
    )
    gc.set_defaults(func=cmd_gc)


def cmd_gc(args: argparse.Namespace) -> int:
    if args.store is None:
        return _collect_cache(args)
    return _collect_store(args)


def _outcome(args: argparse.Namespace) -> tuple[str, str]:
    """The verb and the ending of the summary line: what was (or would be) freed."""
    if args.dry_run:
        return "would free", " (--dry-run: nothing was freed)"
    return "freed", ""


def _collect_cache(args: argparse.Namespace) -> int:
    """`sprout gc` without a store: the machine's cache."""
    from sprout.images.gc import collect

    if args.keep or args.run:
        raise UsageError("--keep and --run need a STORE (the machine's cache keeps what runs link)")
    if not args.keep_days >= 0:
        raise UsageError(f"--keep-days: expected a number of days >= 0, got {args.keep_days}")
    done = collect(
        keep_days=args.keep_days, images=args.images, orphan=args.orphan, dry_run=args.dry_run
    )
    copies = shipped_tasks.collect(keep_days=args.keep_days, dry_run=args.dry_run)
    if args.list:
        for name in done.names:
            print(f"  base layer {name}")
        for digest in done.images:
            print(f"  image {digest}")
        for owner in done.orphans:
            kept = "" if args.orphan else ", kept: --orphan frees them"
            print(f"  the layers of {owner} (its link is gone{kept})")
    if args.list or args.dry_run:
        for digest, why in done.kept_images.items():
            print(f"  keeps image {digest}: {why}")
        _list_shipped(copies, args.keep_days)
    verb, dry = _outcome(args)
    print(
        f"{verb} {(done.bytes_freed + copies.bytes_freed) / 1e6:.1f} MB: {done.bases} base "
        f"layers ({len(done.layers)} layers), {len(copies.freed)} shipped task folders, "
        f"{len(done.images)} images ({done.blobs} pulled blobs, {done.chains} shared "
        "layer chains), "
        f"{len(done.orphans) if args.orphan else 0} stores of "
        f"deleted runs{dry}"
    )
    if done.orphans and not args.orphan:
        print(
            f"kept {len(done.orphans)} stores ({done.orphan_bytes / 1e6:.1f} MB) whose run "
            "folder is gone, deleted or moved (-v names them): --orphan frees them"
        )
    return 0


def _list_shipped(copies: shipped_tasks.ShippedCollected, keep_days: float) -> None:
    """The shipped task folders freed, and why each other one stays."""
    for name in copies.freed:
        print(f"  shipped task folder {name} (nobody used it for {keep_days:g} days)")
    for name in copies.debris:
        print(f"  shipped task folder {name} (half unpacked by a killed process)")
    for name, why in copies.kept.items():
        print(f"  keeps shipped task folder {name}: {why}")


def _collect_store(args: argparse.Namespace) -> int:
    """`sprout gc STORE`: the layers of one store that nothing keeps."""
    store_path, databases = _gc_target(args.store)
    databases += [_run_database(run) for run in args.run]
    store = LayerStore(store_path)
    shared_users = os.path.isdir(os.path.join(store_path, "users"))
    if not databases and not shared_users and not args.orphan:
        _refuse_untied(args.store, store)
    for layer_id in args.keep:
        try:
            store.layer(layer_id)
        except UnknownCheckpoint:
            raise UsageError(f"--keep {layer_id}: no such checkpoint in {store_path}") from None

    def references() -> set[str]:
        return _references(store, databases, shared_users, args.orphan and not args.dry_run)

    if shared_users:  # a store of the machine's cache: no base layer is built meanwhile
        from sprout.images.base_layers import collecting

        with collecting(store):
            freed = store.collect(keep=args.keep, references=references, dry_run=args.dry_run)
    else:
        freed = store.collect(keep=args.keep, references=references, dry_run=args.dry_run)
    _report_store(args, store_path, freed, len(databases))
    return 0


def _references(
    store: LayerStore, databases: list[Path], shared_users: bool, forget_lost: bool
) -> set[str]:
    """Read once the store is locked: what every run folder's database references, and, in a
    store of the machine's cache, what run folders link."""
    from sprout.tree import RunDatabaseError, referenced_checkpoints

    found: set[str] = set()
    for database in databases:
        try:
            found |= referenced_checkpoints(database)
        except RunDatabaseError as error:
            raise UsageError(f"{error}; nothing was freed (gc keeps what it references)") from None
    if shared_users:
        from sprout.images.base_layers import linked_by_runs

        found |= linked_by_runs(store, forget_lost=forget_lost)
    return found


def _report_store(args: argparse.Namespace, store_path: str, freed: Freed, runs: int) -> None:
    if freed.missing:
        shown = ", ".join(freed.missing[:5]) + (", ..." if len(freed.missing) > 5 else "")
        print(
            f"sprout gc: warning: {len(freed.missing)} checkpoints that runs reference are "
            f"not in {store_path} (freed before, or never sealed): {shown}",
            file=sys.stderr,
        )
    if args.list:
        for layer_id in freed.layers:
            print(f"  layer {layer_id}")
        for layer_id in freed.debris:
            print(f"  debris {layer_id}")
    verb, dry = _outcome(args)
    print(
        f"{verb} {freed.bytes_freed / 1e6:.1f} MB: {len(freed.layers)} layers no checkpoint "
        f"needs, {len(freed.debris)} left by dead processes; {freed.kept} layers kept for "
        f"{runs} run{'s' if runs != 1 else ''}, named checkpoints and --keep{dry}"
    )


def _gc_target(path: str) -> tuple[str, list[Path]]:
    """The layer store that `sprout gc PATH` collects (PATH is a store, or a run folder) and
    the databases of the runs that use it, whose checkpoints it keeps."""
    from sprout.runfolder import databases_of_store

    if os.path.isfile(os.path.join(path, "store.json")):
        return path, databases_of_store(path)
    folder = Path(path)
    if (folder / "sprout.db").exists() and (folder / "layers" / "store.json").is_file():
        return str(folder / "layers"), databases_of_store(folder / "layers")
    raise UsageError(
        f"{path}: not a layer store (no store.json) nor a run folder (sprout.db and layers/)"
    )


def _refuse_untied(path: str, store: LayerStore) -> None:
    """A store no run can be found for (its run folder moved, a node store of a --ray run,
    one made through the Python API) may still be a run's: freeing its layers by what
    nothing here names could lose every checkpoint of that run."""
    sealed = len(store.sealed_ids())
    if sealed:
        raise UsageError(
            f"{path}: no run folder is found for this store (no sprout.db beside it or beside "
            f"the link that uses it) and it holds {sealed} sealed layers, so nothing was freed: "
            "give --run RUNDIR for the run that uses it, or --orphan to free every layer no "
            "named checkpoint or --keep needs"
        )


def _run_database(run: str) -> Path:
    database = Path(run) / "sprout.db"
    if not database.exists():
        raise UsageError(f"--run {run}: not a run folder (no sprout.db)")
    return database
