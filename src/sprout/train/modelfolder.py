"""Write a model folder atomically: readers see the old folder or the new one, never half of one.

The folder is written beside the target (same filesystem, so rename is atomic),
every file and the folder are fsynced, then it takes the target's place: with
one renameat2(RENAME_EXCHANGE) where the kernel has it, else by moving the old
folder aside first (then, for an instant, there is no folder at the target,
but never a partial one). The old folder is deleted last. A failure before
the swap removes the temporary folder and leaves the target untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sprout.durable import libc
from sprout.train.batching import LearnerError

if TYPE_CHECKING:
    import torch

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def save_folder_atomically(target: str | Path, write: Callable[[Path], None]) -> Path:
    """Call `write(folder)` on a fresh folder beside `target`, then swap it in.

    An existing target is replaced only when it looks like a model folder (has a
    config.json) or is empty, so a mistyped `--out` cannot delete unrelated files.
    """
    target = check_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.saving-{secrets.token_hex(4)}")
    temporary.mkdir()
    try:
        write(temporary)
        _fsync_tree(temporary)
        if target.exists():
            _swap(temporary, target)  # the old folder is now at `temporary`
        else:
            os.rename(temporary, target)
        _fsync_dir(target.parent)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return target


def check_target(target: str | Path) -> Path:
    """The absolute target; LearnerError when it exists and may not be replaced.

    Callers that spend minutes before saving check first, so that a mistyped
    output folder fails at once.
    """
    target = Path(target).absolute()
    if target.exists() and not _replaceable(target):
        raise LearnerError(
            f"{target}: exists and is not a model folder (no config.json); refusing to replace it"
        )
    return target


def _replaceable(path: Path) -> bool:
    return path.is_dir() and ((path / "config.json").is_file() or not any(path.iterdir()))


def _swap(new: Path, old: Path) -> None:
    """Exchange two folders atomically where possible; afterwards `new` holds the old one."""
    try:
        exchange = libc().renameat2
    except (OSError, AttributeError):
        exchange = None
    if exchange is not None:
        result = exchange(
            _AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(old), _RENAME_EXCHANGE
        )
        if result == 0:
            return
    aside = new.with_name(new.name + ".old")
    os.rename(old, aside)
    os.rename(new, old)
    os.rename(aside, new)


def _fsync_tree(root: Path) -> None:
    for directory, _dirs, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(directory))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with contextlib.suppress(OSError):  # some filesystems refuse fsync on directories
            os.fsync(fd)
    finally:
        os.close(fd)


def cast_state_dict(model: Any, dtype: torch.dtype) -> dict[str, Any] | None:
    """The model's state dict in `dtype`, tied weights still one tensor (None: already in it).

    Saving in the checkpoint's own dtype keeps a bf16 model a bf16 model when it
    was trained with fp32 master weights.
    """
    state = model.state_dict()
    if all(t.dtype == dtype or not t.is_floating_point() for t in state.values()):
        return None
    cast: dict[int, Any] = {}
    out = {}
    for name, tensor in state.items():
        if tensor.is_floating_point():
            key = tensor.data_ptr()
            if key not in cast:
                cast[key] = tensor.detach().to(dtype)
            tensor = cast[key]
        out[name] = tensor
    return out


def set_config_dtype(folder: Path, dtype: torch.dtype) -> None:
    """Write `dtype` into a saved config.json: save_pretrained records the dtype of the
    weights in memory, not that of the state dict it was given."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    name = str(dtype).removeprefix("torch.")
    for key in ("dtype", "torch_dtype"):
        if key in config:
            config[key] = name
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
