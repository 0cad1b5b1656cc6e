"""Which files each turn of an attempt changed, as the tree recorded them.

A turn's checkpoint is sealed on top of the previous checkpoint on its path, and
what the turn wrote is recorded with it (`Turn.changes`); the roles read that,
never the sandbox's layers.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection

from sprout.edits import is_noise
from sprout.tree import Attempt, RolloutTree


def turn_files(tree: RolloutTree, attempt: Attempt) -> dict[int, list[str]]:
    """The paths (absolute, inside the sandbox) each turn on `attempt`'s path changed,
    by turn index, noise left out. A turn whose changes nobody can tell any more (an
    old run's checkpoint freed by GC) lists nothing rather than failing the role."""
    return {
        index: [c.path for c in changes or () if not is_noise(c.path)]
        for index, changes in tree.changes(attempt).items()
    }


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
