"""Named checkpoints (`r/NAME` in a layer store), such as a task's cached base layer.

GC keeps every named checkpoint and all it stacks on; a name whose layer GC or a crash
lost reads as none (see `LayerStore.ref`).
"""

from __future__ import annotations

import contextlib
import os

from sprout.durable import write_atomically
from sprout.sandbox.errors import BadArgument


def ref_name(name: str) -> str:
    """`name`, checked to be a file name of its own: it becomes `r/NAME`."""
    if not name or not all(c.isalnum() or c in "._-" for c in name) or name.startswith("."):
        raise BadArgument("name", f"{name!r}: use letters, digits, '.', '_' and '-'")
    return name


def read_ref(ref_dir: str, name: str) -> str | None:
    """The layer id saved under `name`, None when nothing is."""
    try:
        with open(os.path.join(ref_dir, ref_name(name)), encoding="ascii") as handle:
            return handle.read().strip()
    except FileNotFoundError:
        return None


def write_ref(ref_dir: str, name: str, layer_id: str, durable: bool) -> None:
    """Save `layer_id` under `name`, atomically (and flushed when `durable`)."""
    write_atomically(os.path.join(ref_dir, ref_name(name)), layer_id, durable)


def ref_names(ref_dir: str) -> list[str]:
    """Every name saved (a half-written one, `write_atomically`'s `.tmp`, is none yet)."""
    return [name for name in os.listdir(ref_dir) if not name.endswith(".tmp")]


def drop_ref(ref_dir: str, name: str) -> None:
    """Forget the name `name` (its layers are left to GC)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(ref_dir, ref_name(name)))
