"""A rows file's one task, placed on its image as a run places it: loaded, then its image
pulled from the test's registry (the image tests of each row format)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sprout.task import Task
from sprout.tasks import load_tasks
from sprout.tasks.setup.image_choice import choose_task_images


def placed(rows: Path, **sources: Any) -> Task:
    """The one row's task on the image pulled from the test's registry; `sources` as
    `load_tasks` takes them (`swe_gym=`)."""
    loaded = load_tasks([rows], **sources)
    assert loaded.errors == []
    chosen = choose_task_images(loaded.tasks, say=lambda line: None)
    assert chosen.errors == []
    [task] = chosen.tasks
    return task
