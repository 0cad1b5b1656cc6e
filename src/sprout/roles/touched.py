"""Which files each turn of an attempt changed, read from its checkpoint layers.

A turn's checkpoint is sealed on top of the previous checkpoint on its path, so
what the turn wrote is exactly the difference between the two; nothing is
mounted or re-run to learn it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection

from sprout.edits import is_noise
from sprout.sandbox import LayerStore, SandboxError
from sprout.sandbox.changes import checkpoint_changes
from sprout.tree import Attempt, RolloutTree


def turn_files(tree: RolloutTree, layers: LayerStore, attempt: Attempt) -> dict[int, list[str]]:
    """The paths (absolute, inside the sandbox) each turn on `attempt`'s path changed,
    by turn index, noise left out. A checkpoint the layer store no longer holds (freed
    by GC) lists nothing rather than failing the role."""
    previous = tree.root_of(attempt).base_checkpoint
    files: dict[int, list[str]] = {}
    for turn in tree.path(attempt):
        try:
            changes = checkpoint_changes(layers, previous, turn.checkpoint) if previous else []
        except SandboxError:
            changes = []
        files[turn.index] = [c.path for c in changes if not is_noise(c.path)]
        previous = turn.checkpoint
    return files


def touches(changed: Collection[str], path: str) -> bool:
    """Whether `changed` holds `path` or a directory above it (a turn that deleted or
    replaced a whole directory touched every file in it)."""
    current = posixpath.normpath(path)
    while True:
        if current in changed:
            return True
        parent = posixpath.dirname(current)
        if parent == current:
            return False
        current = parent
