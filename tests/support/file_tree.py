"""Folders as values a test can compare: every entry under a folder with what it holds, so
that two layers (forked, replayed or shipped) are checked equal entry for entry."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from sprout.sandbox import LayerStore


def _entries(root: str) -> Iterator[tuple[str, str]]:
    """(path relative to `root`, path) of every folder, file and link under `root`."""
    for folder, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            path = os.path.join(folder, name)
            yield os.path.relpath(path, root), path


def tree_snapshot(root: str) -> dict[str, bytes | str]:
    """Every path under a layer directory with its content (or link target, or type)."""
    snapshot: dict[str, bytes | str] = {}
    for relative, path in _entries(root):
        if os.path.islink(path):
            snapshot[relative] = "-> " + os.readlink(path)
        elif os.path.isfile(path):
            snapshot[relative] = Path(path).read_bytes()
        else:
            snapshot[relative] = f"mode {os.lstat(path).st_mode:o}"
    return snapshot


def files_of(store: LayerStore, layer_id: str) -> dict[str, tuple[int, int, int, str]]:
    """Every entry of a layer's directory: mode, owner, group and content hash (or link
    target, or a folder's extended attributes: an opaque folder's mark among them)."""
    found = {}
    for relative, path in _entries(os.path.realpath(store.diff_dir(layer_id))):
        info = os.lstat(path)
        if os.path.islink(path):
            body = "->" + os.readlink(path)
        elif os.path.isfile(path):
            body = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        else:
            body = ",".join(sorted(os.listxattr(path, follow_symlinks=False)))
        found[relative] = (info.st_mode, info.st_uid, info.st_gid, body)
    return found
