"""What changed between two checkpoints, read from the layers between them.

Only the paths the newer layers mention are examined (plus the direct children
of directories they replaced whole), so the cost follows what the turns wrote,
never the size of the image.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sprout.sandbox.errors import BadArgument
from sprout.sandbox.layers.whiteouts import LayerFormat, lookup, names_below, walk
from sprout.workspace import Change

if TYPE_CHECKING:
    from sprout.sandbox.layers.store import LayerStore


def diff_layers(
    above: Sequence[str], below: Sequence[str], image: str | None, fmt: LayerFormat
) -> list[Change]:
    """Changes that the `above` layers (top first) make to the view of `below` over `image`."""
    touched: set[str] = set()
    replaced_dirs: list[str] = []
    for layer in above:
        for rel, item in walk(layer, fmt):
            touched.add(rel)
            if item.kind == "opaque":
                replaced_dirs.append(rel)
    for rel in replaced_dirs:
        touched.update(f"{rel}/{name}" for name in names_below(below, image, rel, fmt))
    current = [*above, *below]
    changes = []
    new_dirs: set[str] = set()
    """Directories absent below: nothing under them needs looking up there (a turn that
    installs a package adds thousands of paths under a few new directories)."""
    for rel in sorted(touched):
        now = lookup(current, image, rel, fmt)
        before = None if _under(rel, new_dirs) else lookup(below, image, rel, fmt)
        if before is None and now is not None and os.path.isdir(now):
            new_dirs.add(rel)
        if now is None and before is None:
            continue
        if now is None:
            changes.append(Change("/" + rel, "deleted", 0))
            continue
        is_dir = os.path.isdir(now) and not os.path.islink(now)
        if before is None:
            changes.append(Change("/" + rel, "added", 0 if is_dir else os.lstat(now).st_size))
        elif not (is_dir and os.path.isdir(before) and not os.path.islink(before)):
            changes.append(Change("/" + rel, "modified", 0 if is_dir else os.lstat(now).st_size))
    return changes


def _under(rel: str, dirs: set[str]) -> bool:
    """Whether a directory above `rel` is one of `dirs`."""
    parent = posixpath.dirname(rel)
    while parent:
        if parent in dirs:
            return True
        parent = posixpath.dirname(parent)
    return False


def checkpoint_changes(store: LayerStore, since: str, checkpoint: str) -> list[Change]:
    """Changes that checkpoint `checkpoint` makes to the earlier checkpoint `since` under it.

    Read from the sealed layers alone (nothing is mounted or run), so callers that
    only inspect history, like the analyst listing what each turn wrote, need no
    sandbox. Equal ids mean an empty turn: no changes.
    """
    if checkpoint == since:
        return []
    chain = store.ancestry(checkpoint)
    if since not in chain:
        store.layer(since)  # an unknown id gets UnknownCheckpoint
        raise BadArgument("since", f"checkpoint {since} is not under checkpoint {checkpoint}")
    above = [store.diff_dir(layer_id) for layer_id in chain[: chain.index(since)]]
    below = [store.diff_dir(layer_id) for layer_id in store.stack(since)]
    config = store.layer(checkpoint).config
    below += store.image_layers(config)
    return diff_layers(above, below, store.image_root(config), store.format)
