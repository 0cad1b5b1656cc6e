"""The parquet rows verl trains the `sprout` agent loop on, and the task each row names.

verl's `RLHFDataset` reads a parquet file of rows and hands every column of a row to the
agent loop its `agent_name` names (`run(**kwargs)`). A sprout row holds what verl itself
reads (`prompt`, `data_source`, `reward_model`, `extra_info.index`) and, in
`sprout_task`, where its task is and how `sprout export --format verl-dataset` read it,
so that the loop, in whatever process verl plays the row, loads the very same task:

    {"data_source": "sprout", "agent_name": "sprout",
     "prompt": [{"role": "user", "content": INSTRUCTION}],
     "reward_model": {"style": "sprout", "ground_truth": ""},
     "extra_info": {"index": I, "task_id": ID},
     "sprout_task": {"source": ABSOLUTE_PATH, "id": ID,
                     "options": {"images": FILE|None, "repos": DIR|None, ...}}}

The prompt is there for verl (its length filter, its logs); the loop plays sprout's own
actor prompt, and the reward is sprout's verifier's, so `ground_truth` stays empty.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from sprout.durable import fsync_directory, fsync_file
from sprout.errors import SproutError
from sprout.task import Task, TaskError
from sprout.tasks import load_image_table, load_tasks

AGENT_NAME = "sprout"
"""The agent loop's name: the row's `agent_name` and the YAML entry's `name`."""
PYARROW = "writing parquet needs pyarrow (pip install 'sprout-rl[parquet]')"


class DatasetError(SproutError, ValueError):
    """A row that names no task sprout can load, or a dataset file verl cannot read."""


class TaskOptions(BaseModel):
    """How the export read its tasks (`sprout run`'s options of the same names), absolute
    paths or None where not given: the loop reads each task as the export did. The
    `[images]` table is kept as its file, not its contents: the rows reach the loop
    through Hugging Face datasets, which has no column type for a mapping."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    images: str | None = None
    """The TOML file of an `[images]` table (FROM name -> root-filesystem folder)."""
    repos: str | None = None
    """Local clones of SWE-bench repositories."""
    run_scripts: str | None = None
    """SWE-bench Pro's run_scripts/ folder."""
    swe_gym: str | None = None
    """A checkout of SWE-Gym's fork of SWE-bench's harness."""
    swe_smith: str | None = None
    """A Python interpreter with the swesmith package."""

    def keywords(self) -> dict[str, Any]:
        """`load_tasks`' keyword options: the ones given, the table read from its file."""
        given = self.model_dump(exclude_none=True)
        if self.images is not None:
            given["images"] = load_image_table(self.images)
        return given


class TaskReference(BaseModel):
    """A row's `sprout_task`: the path a task loads from (its folder, a folder of tasks or
    a file of rows), its id there, and how it was read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    id: str
    options: TaskOptions = TaskOptions()

    @field_validator("source")
    @classmethod
    def _absolute(cls, source: str) -> str:
        if not os.path.isabs(source):  # relative to which folder, in a verl worker?
            raise ValueError(f"{source!r} is not an absolute path")
        return source


def dataset_rows(tasks: Sequence[Task], options: TaskOptions) -> list[dict[str, Any]]:
    """One row per task, in order (see the module docstring); each names the path its task
    loaded from (its folder, or its file of rows), so the loop reads no more than that."""
    return [
        {
            "data_source": AGENT_NAME,
            "agent_name": AGENT_NAME,
            "prompt": [{"role": "user", "content": task.instruction}],
            "reward_model": {"style": AGENT_NAME, "ground_truth": ""},
            "extra_info": {"index": index, "task_id": task.id},
            "sprout_task": TaskReference(
                source=os.path.abspath(task.path), id=task.id, options=options
            ).model_dump(),
        }
        for index, task in enumerate(tasks)
    ]


def dataset_path(out: str | Path) -> Path:
    """`out` as the dataset's path; DatasetError for one verl would not read as parquet."""
    if Path(out).suffix != ".parquet":
        raise DatasetError(
            f"{out}: not a .parquet file (verl's RLHFDataset reads the rows as parquet)"
        )
    return Path(out).resolve()


def write_dataset(rows: Sequence[Mapping[str, Any]], out: str | Path) -> Path:
    """Write `rows` to parquet file `out`, all or nothing: readers see the old file or the
    new (a temporary file of this thread's, flushed, then renamed over it)."""
    path = dataset_path(out)
    try:
        import pyarrow  # type: ignore[import-untyped]
        import pyarrow.parquet as parquet  # type: ignore[import-untyped]
    except ImportError:
        raise DatasetError(f"{path}: {PYARROW}") from None
    table = pyarrow.Table.from_pylist(list(rows), schema=_schema(pyarrow))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
    try:
        parquet.write_table(table, temporary)
        fsync_file(temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    fsync_directory(str(path.parent))
    return path


def _schema(pyarrow: Any) -> Any:
    """The rows' columns with their types spelled out, not inferred: an option not given
    is a null string (not a column of type null), so that files of several exports
    concatenate, as verl concatenates its `data.train_files`."""
    text = pyarrow.string()
    options = pyarrow.struct([(name, text) for name in TaskOptions.model_fields])
    return pyarrow.schema(
        [
            ("data_source", text),
            ("agent_name", text),
            ("prompt", pyarrow.list_(pyarrow.struct([("role", text), ("content", text)]))),
            ("reward_model", pyarrow.struct([("style", text), ("ground_truth", text)])),
            ("extra_info", pyarrow.struct([("index", pyarrow.int64()), ("task_id", text)])),
            ("sprout_task", pyarrow.struct([("source", text), ("id", text), ("options", options)])),
        ]
    )


def row_task(sprout_task: Mapping[str, Any]) -> Task:
    """The task a row's `sprout_task` names, read as the export read it. Each source is
    read once per process, whichever thread asks first (the others wait for it): a file
    of thousands of rows is not read again for every sample. DatasetError, naming the
    row's field and value, for a source or an id that holds no task."""
    try:
        reference = TaskReference.model_validate(sprout_task)
    except ValidationError as error:
        first = error.errors()[0]
        field = "".join(f".{part}" for part in first["loc"])
        problem = first["msg"].removeprefix("Value error, ")
        raise DatasetError(f"sprout_task{field}: {problem}") from None
    tasks, errors = _source(reference)
    if reference.id in tasks:
        return tasks[reference.id]
    why = next((line for line in errors if line.startswith(f"{reference.id}:")), None)
    raise DatasetError(
        f"sprout_task.id: {reference.id!r}: no such task in {reference.source}"
        + (f" ({why})" if why else "")
    )


_loaded: dict[TaskReference, tuple[dict[str, Task], list[str]]] = {}
_loading: dict[TaskReference, threading.Lock] = {}
_guard = threading.Lock()


def _source(reference: TaskReference) -> tuple[dict[str, Task], list[str]]:
    """(the tasks of `reference`'s source by id, the lines of those that did not load),
    read once per process and options."""
    key = reference.model_copy(update={"id": ""})
    with _guard:
        lock = _loading.setdefault(key, threading.Lock())
    with lock:
        if key not in _loaded:
            try:
                options = reference.options.keywords()
            except TaskError as error:
                raise DatasetError(f"sprout_task.options.images: {error}") from None
            try:
                loaded = load_tasks([reference.source], **options)
            except TaskError as error:
                raise DatasetError(f"sprout_task.source: {error}") from None
            _loaded[key] = ({task.id: task for task in loaded.tasks}, loaded.errors)
        return _loaded[key]
