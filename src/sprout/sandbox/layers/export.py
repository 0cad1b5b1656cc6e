"""Copying a path out of a checkpoint onto the host, as a sandbox on it would see the path.

What `COPY --from` of a built stage needs: the files, links and directories under one
path of a layer stack, with their owners, modes and times, read from the layers without
mounting or running anything.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from sprout.sandbox.layers.whiteouts import LayerFormat, lookup, names_below, resolve
from sprout.sandbox.storefs.files import copy_dir_attributes, place_file


def export_path(
    stack: Sequence[str],
    image: str | None,
    fmt: LayerFormat,
    path: str,
    destination: str | os.PathLike[str],
) -> bool:
    """Copy what `path` is in the view of layer directories `stack` (top first) over
    `image` to `destination`, a new host path; False when there is nothing there.

    Whiteouts and opaque directories hide what lies below them, and links on the way to
    `path` are followed inside the view, never on the host; links under `path` are copied
    as links, not followed."""
    found = resolve(stack, image, path, fmt)
    if found is None or found.found is None:
        return False
    pending = [("/".join(found.parts), found.found, os.fspath(destination))]
    directories: list[tuple[str, str]] = []
    while pending:
        rel, entry, target = pending.pop()
        if not stat.S_ISDIR(os.lstat(entry).st_mode):
            place_file(entry, target, link=False)
            continue
        os.mkdir(target)
        directories.append((entry, target))
        for name in sorted(names_below(stack, image, rel, fmt)):
            child = f"{rel}/{name}" if rel else name
            below = lookup(stack, image, child, fmt)
            if below is not None:
                pending.append((child, below, os.path.join(target, name)))
    for entry, target in reversed(directories):  # after their contents, for the times
        copy_dir_attributes(entry, target, owner_required=False)
    return True
