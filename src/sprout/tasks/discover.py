"""Finding tasks under the paths a user names, whatever their format.

A path is one task folder, or a folder whose sub-folders are tasks. A task
that cannot be read becomes an error line and the others still load: one
mistyped `task.toml` must not stop a run over a hundred tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sprout.task import Task, TaskError
from sprout.tasks.native import load_native


@dataclass
class LoadedTasks:
    """The tasks that loaded, in a stable order, and one line for each that did not."""

    tasks: list[Task] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _is_native(path: Path) -> bool:
    return (path / "instruction.md").is_file()


def load_tasks(
    paths: Sequence[str | Path],
    *,
    images: Mapping[str, str] | None = None,
    repos: str | Path | None = None,
) -> LoadedTasks:
    """Every task under `paths`; a path that does not exist or holds no task is a TaskError.

    `images` maps Dockerfile `FROM` names to root-filesystem folders; `repos`
    is where local clones of SWE-bench repositories live.
    """
    loaded = LoadedTasks()
    seen: set[str] = set()
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise TaskError(f"{path}: no such file or folder")
        if _is_native(path):
            folders = [path]
        elif path.is_dir():
            folders = sorted(child for child in path.iterdir() if _is_native(child))
        else:
            folders = []
        if not folders:
            raise TaskError(f"{path}: no task here (a task folder holds instruction.md)")
        for folder in folders:
            try:
                task = load_native(folder, images=images)
            except TaskError as error:
                loaded.errors.append(str(error))
                continue
            if task.id in seen:
                loaded.errors.append(f"{task.id}: {folder}: a second task with this id; skipped")
                continue
            seen.add(task.id)
            loaded.tasks.append(task)
    return loaded
