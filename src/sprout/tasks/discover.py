"""Finding tasks under the paths a user names, whatever their format.

A path is one task folder (native: instruction.md; Terminal-Bench 1: task.yaml), a
folder whose sub-folders are tasks (formats may mix), or a file of rows told apart by their
fields: SWE-bench's (`.jsonl`), SWE-bench Pro's, SWE-rebench's (V1, V2) or R2E-Gym's
(`.jsonl`, `.parquet`). A task that cannot be read becomes an error line and the others
still load: one mistyped `task.toml` must not stop a run over a hundred tasks.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sprout.config import only_tables
from sprout.task import Task, TaskError
from sprout.tasks.files import naming_task, read_toml
from sprout.tasks.sources.native import load_native
from sprout.tasks.sources.r2egym import is_r2egym_rows, load_r2egym
from sprout.tasks.sources.swebench import load_swebench
from sprout.tasks.sources.swebench_pro import holds_pro_rows, load_swebench_pro
from sprout.tasks.sources.swegym import load_swegym
from sprout.tasks.sources.swerebench_v1 import holds_v1_rows, load_swerebench_v1
from sprout.tasks.sources.swerebench_v2 import holds_rebench_rows, load_swerebench
from sprout.tasks.sources.swesmith import holds_swesmith_rows, load_swesmith
from sprout.tasks.sources.terminal_bench1 import load_terminal_bench1


@dataclass
class LoadedTasks:
    """The tasks that loaded, in a stable order, and one line for each that did not."""

    tasks: list[Task] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    images: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each task's image as the run chose it (`image_choice.ChosenImages.record`)."""


def _has(folder: Path, name: str) -> bool:
    """Something named `name` is in `folder`: a file, or what should have been one (a
    folder, a link to nowhere), which the loader then names as the task's error."""
    return os.path.lexists(folder / name)


def _loader(path: Path) -> Callable[..., Task] | None:
    """How to read task folder `path`, or None when it is not one."""
    if _has(path, "instruction.md"):
        return load_native
    if _has(path, "task.yaml"):
        return load_terminal_bench1
    return None


def load_tasks(
    paths: Sequence[str | Path],
    *,
    images: Mapping[str, str] | None = None,
    repos: str | Path | None = None,
    run_scripts: str | Path | None = None,
    swe_gym: str | Path | None = None,
    swe_smith: str | None = None,
) -> LoadedTasks:
    """Every task under `paths`; a path that does not exist or holds no task is a TaskError.

    `images` maps Dockerfile `FROM` names to root-filesystem folders; `repos`
    is where local clones of SWE-bench repositories live; `run_scripts` is SWE-bench
    Pro's run_scripts/ folder, when not beside the rows' file; `swe_gym` a checkout of
    SWE-Gym's fork of SWE-bench's harness, whose tables SWE-bench-shaped rows are then read
    with (SWE-Gym's rows); `swe_smith` a Python interpreter with the swesmith package, whose
    profiles SWE-smith's rows are read with.
    """
    loaded = LoadedTasks()
    seen: set[str] = set()
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise TaskError(f"{path}: no such file or folder")
        if path.is_file() and path.suffix in (".jsonl", ".parquet"):
            try:
                found = _load_rows(
                    path,
                    repos=repos,
                    images=images,
                    run_scripts=run_scripts,
                    swe_gym=swe_gym,
                    swe_smith=swe_smith,
                )
            except TaskError as error:
                loaded.errors.append(str(error))
                continue
            for line in found:
                _add(loaded, seen, line, path)
            continue
        if _loader(path) is not None:
            folders = [path]
        elif path.is_dir():
            folders = sorted(child for child in path.iterdir() if _loader(child) is not None)
        else:
            folders = []
        if not folders:
            raise TaskError(
                f"{path}: no task here (a task folder holds instruction.md or task.yaml; "
                "SWE-bench tasks come in a .jsonl or .parquet file)"
            )
        for folder in folders:
            _add(loaded, seen, _load_folder(folder, images), folder)
    return loaded


def _load_rows(
    path: Path,
    *,
    repos: str | Path | None,
    images: Mapping[str, str] | None,
    run_scripts: str | Path | None,
    swe_gym: str | Path | None,
    swe_smith: str | None,
) -> list[Task | TaskError]:
    """The rows of a `.jsonl` or `.parquet` file, by the source its fields say."""
    if is_r2egym_rows(path):  # R2E-Gym's own rows have no instance_id
        return load_r2egym(path)
    if holds_pro_rows(path):
        return load_swebench_pro(path, run_scripts=run_scripts)
    if holds_rebench_rows(path):
        return load_swerebench(path)
    if holds_v1_rows(path):
        return load_swerebench_v1(path)
    if path.suffix == ".parquet":
        raise TaskError(
            f"{path}: not the rows of SWE-bench Pro, SWE-rebench (V1 or V2) or R2E-Gym "
            "(sprout reads parquet files of those; SWE-bench rows as JSON Lines)"
        )
    if holds_swesmith_rows(path):
        return load_swesmith(path, swe_smith)
    if swe_gym is not None:
        return load_swegym(path, swe_gym)
    return load_swebench(path, repos=repos, images=images)


def read_again(task: Task, images: Mapping[str, str] | None) -> Task | TaskError:
    """`task` read from its folder again (a row of a .jsonl file as it is): its Dockerfile
    over the ENV of a base image that was pulled since it was first read."""
    if not task.path.is_dir() or _loader(task.path) is None:
        return task
    return _load_folder(task.path, images)


def _load_folder(folder: Path, images: Mapping[str, str] | None) -> Task | TaskError:
    load = _loader(folder)
    assert load is not None
    name = folder.resolve().name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        shown = printable(name)
        return TaskError(
            f"{shown}: {printable(str(folder))}: the folder's name (the task's id) "
            "is not UTF-8; rename it"
        )
    try:
        return load(folder, images=images)
    except TaskError as error:
        return error
    except (OSError, ValueError) as error:  # what no loader foresaw is still one line
        return TaskError(f"{name}: {folder}: {type(error).__name__}: {error}")


def printable(text: str) -> str:
    """`text` with what UTF-8 cannot hold (a file name's undecodable bytes) as escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _add(loaded: LoadedTasks, seen: set[str], entry: Task | TaskError, where: Path) -> None:
    """Keep a task unless its id was taken; keep an error as its line."""
    if isinstance(entry, TaskError):
        loaded.errors.append(str(entry))
    elif entry.id in seen:
        loaded.errors.append(f"{entry.id}: {where}: a second task with this id; skipped")
    else:
        seen.add(entry.id)
        loaded.tasks.append(entry)


def load_image_table(path: str | Path) -> dict[str, str]:
    """The `[images]` table of a TOML file: image name (as FROM writes it) -> root-filesystem
    folder, relative to the file's folder. Errors name the file and the key."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"{path}: no such file (--images wants a TOML file with [images])")
    data = read_toml(path, None) or {}
    with naming_task(None):
        only_tables(data, ["images"], path, "the file holds one [images] table")
    table = data.get("images")
    if not isinstance(table, dict):
        raise TaskError(f'{path}: images: missing; write [images] then "name" = "folder" lines')
    images = {}
    for name, folder in table.items():
        key = f"images.{json.dumps(name)}"
        if not isinstance(folder, str) or not folder:
            raise TaskError(f"{path}: {key}: expected a folder path, got {folder!r}")
        resolved = (path.parent / folder).resolve()
        if not resolved.is_dir():
            raise TaskError(f"{path}: {key}: {resolved} is not a folder")
        images[name] = str(resolved)
    return images


def grouped_warnings(warnings: Iterable[tuple[str, Sequence[str]]]) -> list[str]:
    """Each distinct warning once, with the tasks it concerns, from (task id, warnings) pairs.

    A warning that names its file ("…/Dockerfile:1: no root filesystem given for
    image …") is the same for every task built from the same image: one line
    for all of them keeps a run over a hundred tasks readable.
    """
    tasks: dict[str, list[str]] = {}
    for task_id, lines in warnings:
        for warning in lines:
            message = re.sub(r"^\S+:\d+: ", "", warning)
            tasks.setdefault(message, []).append(task_id)
    grouped = []
    for message, ids in tasks.items():
        named = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        grouped.append(f"{message} ({named})")
    return grouped


def load_one_task(path: str | Path) -> Task:
    """The one task at `path`, on the image `sprout run` would choose for it (the image
    cache, else the registry, else Debian's approximation, each said on stderr): what an
    environment of another tool (mini-swe-agent's, Harbor's) builds its checkpoint 0 from."""
    from sprout.tasks.setup.image_choice import choose_task_images

    loaded = load_tasks([path])
    chosen = choose_task_images(
        loaded.tasks,
        "pull",
        say=lambda line: print(line, file=sys.stderr),
        reread=lambda task: read_again(task, None),
    )
    errors = [*loaded.errors, *chosen.errors]
    if errors or len(chosen.tasks) != 1:
        raise TaskError(f"{path}: {'; '.join(errors) or f'{len(chosen.tasks)} tasks, not one'}")
    return chosen.tasks[0]
