"""Task folders shipped from the driver to the nodes, so nodes need no copy of their own.

The driver packs a task's folder once (a tar stream: names, modes, owners, times and
links inside the folder; a link that leads out of it is refused, since on a node it would
lead to that node's file, not the driver's) and puts it in Ray's object store with a
digest of its content (`sprout.tasks.digest`'s rule, the folder's name first). On a
node, the task's actor works on the folder at the task's own path when it is there with
the same digest (a shared filesystem, the same checkout);
otherwise on the shipped copy, unpacked once per digest into the machine's cache, which
every sandbox's view of the host hides, as it hides the task folder itself. A process that
uses a copy holds it while it lives, and notes when it took it, so `sprout gc` frees only
copies nobody uses (`sprout.images.shipped_tasks`).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray

from sprout.images.shipped_tasks import shipped_root, taking
from sprout.task import Task, TaskError
from sprout.tasks.digest import Digest, Entry, folder_entries
from sprout.tasks.files import kind
from sprout.workspace import WorkspaceError

DIGEST_LENGTH = 32
"""Hex digits of a shipped folder's digest: the name of its copy on a node
(`sprout.images.shipped_tasks.DIGEST`)."""
FOLDER_FIELDS = ("environment_dir", "solution_dir", "tests_dir")
"""The fields of a `Task` besides `path` that name folders the task reads on the driver."""


@dataclass(frozen=True)
class ShippedFolder:
    """A task folder packed on the driver: the digest of its content, and the tar stream of
    it in Ray's object store (fetched only by a node that lacks the folder)."""

    digest: str
    data: Any
    """The `ray.ObjectRef` of the tar stream."""


def cache_root() -> Path:
    """Where shipped task folders are unpacked on this machine, one folder per digest: made
    on first use, readable by its owner only."""
    root = shipped_root()
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    return root


def ship(task: Task) -> ShippedFolder | None:
    """`task`'s folder packed and put in the object store, once; None when `task.path` is
    no folder (a SWE-bench file's tasks): what such a task reads is not one folder."""
    if not task.path.is_dir():
        return None
    digest, stream = pack(task.path, task.id)
    return ShippedFolder(digest, ray.put(stream))


def pack(folder: Path, task_id: str) -> tuple[str, bytes]:
    """(digest, tar stream) of `folder`; TaskError naming the first file that cannot go."""
    digest = _named(folder)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in _entries(folder, task_id):
            digest.add(entry)
            info = tar.gettarinfo(entry.path, arcname=entry.relative)
            regular = stat.S_ISREG(entry.status.st_mode)
            tar.addfile(info, io.BytesIO(entry.data) if regular else None)
    return digest.hexdigest(DIGEST_LENGTH), buffer.getvalue()


def shipped_digest(folder: Path, task_id: str) -> str:
    """The digest `pack` gives `folder`, without packing it."""
    digest = _named(folder)
    for entry in _entries(folder, task_id):
        digest.add(entry)
    return digest.hexdigest(DIGEST_LENGTH)


def unpack(digest: str, name: str, stream: Callable[[], bytes], root: Path) -> Path:
    """The folder `name` of the stream with `digest`, unpacked under `root` on first use
    (`stream` is called only then); every later call finds it there. Unpacked into a
    temporary folder and renamed into place, so no one ever sees half a folder; when two
    actors unpack the same digest at once, the first rename wins and the other's copy goes.
    The copy is held by this process from then on, so `sprout gc` leaves it."""
    target = root / digest
    with taking(root, digest):
        if not target.is_dir():
            temporary = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=root))
            try:
                with tarfile.open(fileobj=io.BytesIO(stream()), mode="r:") as tar:
                    # sprout packed it, links checked: modes and owners come back exactly
                    tar.extractall(temporary / name, numeric_owner=True, filter="fully_trusted")
                try:
                    os.rename(temporary, target)
                except OSError:
                    if not target.is_dir():  # else another actor was first
                        raise
            finally:
                shutil.rmtree(temporary, ignore_errors=True)
    return target / name


def folder_here(task: Task, shipped: ShippedFolder, root: Path) -> Path:
    """Where this node finds `task`'s folder: at its own path when the folder there has the
    shipped digest, else the shipped copy, unpacked under `root`."""
    if task.path.is_dir():
        with contextlib.suppress(TaskError):  # a folder that could not ship is not the same
            if shipped_digest(task.path, task.id) == shipped.digest:
                return task.path
    try:
        return unpack(shipped.digest, task.path.name, lambda: ray.get(shipped.data), root)
    except OSError as error:  # this node's disk: the place's fault, not the task's
        raise WorkspaceError(
            f"{task.id}: the task folder shipped from the driver cannot be unpacked in {root} "
            f"on this node: {error}"
        ) from None


def relocated(task: Task, path: Path) -> Task:
    """`task` with its folder at `path`: `path`, and every folder field inside the old
    folder, moved along (a folder outside it is left where it was)."""
    if path == task.path:
        return task
    update: dict[str, Path] = {"path": path}
    for field in FOLDER_FIELDS:
        value: Path | None = getattr(task, field)
        if value is not None and value.is_relative_to(task.path):
            update[field] = path / value.relative_to(task.path)
    return task.model_copy(update=update)


def _entries(folder: Path, task_id: str) -> Iterator[Entry]:
    """`folder_entries(folder)`, each below the folder checked to travel
    (`_check_travels`)."""
    for entry in folder_entries(folder):
        if entry.relative != ".":
            _check_travels(folder, entry, task_id)
        yield entry


def _check_travels(folder: Path, entry: Entry, task_id: str) -> None:
    """TaskError unless `entry` is a file, a folder, or a link that stays inside `folder`
    wherever the folder is."""
    mode = entry.status.st_mode
    if stat.S_ISLNK(mode):
        target = os.fsdecode(entry.data)
        resolved = os.path.normpath(os.path.join(entry.path.parent, target))
        if os.path.isabs(target) or not Path(resolved).is_relative_to(folder):
            raise TaskError(
                f"{task_id}: {entry.path}: a link to {target}, outside the task folder; a task "
                "shipped to a node carries only its own files (copy the file in, or link "
                "within the folder)"
            )
    elif not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise TaskError(
            f"{task_id}: {entry.path}: {kind(mode)}; a task shipped to a node "
            "carries only files, folders and links"
        )


def _named(folder: Path) -> Digest:
    """A digest (`sprout.tasks.digest`'s rule) that starts with the folder's name: a copy is
    unpacked at DIGEST/NAME, and a task's id may be its folder's name, so two folders of the
    same files under two names are two cache entries."""
    return Digest(os.fsencode(folder.name) + b"\0")
