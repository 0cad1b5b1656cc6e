"""Rows of a dataset file as publishers ship them: JSON Lines, or the parquet file a Hugging
Face dataset is distributed as, read a batch at a time (a dataset of thousands of rows is
never in memory whole). Each row comes with where it is (`FILE:LINE`, `FILE: row N`), or,
for a line that is no JSON object, the one-line TaskError naming it, so that a bad row is
its own error and the others load. The sources of row formats (SWE-bench Pro, R2E-Gym)
read their files through here and tell each other apart by `fields`.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sprout.task import Task, TaskError
from sprout.tasks.files import not_utf8

Row = tuple[str, dict[str, Any] | TaskError]
"""Where a row is, and the row (or what is wrong with its line)."""
PYARROW = "reading parquet needs pyarrow (pip install 'sprout-rl[parquet]')"


def rows(path: Path, columns: Sequence[str] | None = None) -> Iterator[Row]:
    """Each row of `path`, a `.parquet` file (only `columns`, when given) or JSON Lines."""
    return _parquet_rows(path, columns) if path.suffix == ".parquet" else _jsonl_rows(path)


def fields(path: Path) -> set[str]:
    """The fields of `path`'s rows: a parquet file's columns (TaskError, one line, for one
    that cannot be read), the keys of the first JSON object of a `.jsonl` file (none when
    there is none: the loader of JSON Lines says why)."""
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as parquet  # type: ignore[import-untyped]
        except ImportError:
            raise TaskError(f"{path}: {PYARROW}") from None
        try:
            return set(parquet.read_schema(path).names)
        except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
            raise TaskError(f"{path}: not a parquet file sprout can read ({error})") from None
    try:
        for _, row in _jsonl_rows(path):
            if not isinstance(row, TaskError):
                return set(row)
    except TaskError:
        pass
    return set()


def _jsonl_rows(path: Path) -> Iterator[Row]:
    try:
        handle = path.open("rb")
    except OSError as error:
        raise TaskError(f"{path}: cannot be read ({error.strerror})") from None
    with handle as lines:
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            where = f"{path}:{number}"
            try:
                data = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as error:
                yield where, TaskError(f"?: {where}: {not_utf8(raw, error)}")
                continue
            except json.JSONDecodeError as error:
                yield where, TaskError(f"?: {where}: not valid JSON ({error})")
                continue
            if not isinstance(data, dict):
                kind = type(data).__name__
                yield where, TaskError(f"?: {where}: expected a JSON object, got {kind}")
                continue
            yield where, data


def _parquet_rows(path: Path, columns: Sequence[str] | None) -> Iterator[Row]:
    """`FILE: row N` counting from 1; a column that is null in a row is left out of it, as
    a JSON row would leave the field out."""
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise TaskError(f"{path}: {PYARROW}") from None
    try:
        table = parquet.ParquetFile(path)
        wanted = [name for name in columns or () if name in table.schema_arrow.names]
        number = 0
        for batch in table.iter_batches(batch_size=64, columns=wanted or None):
            for data in batch.to_pylist():
                number += 1
                yield f"{path}: row {number}", {k: v for k, v in data.items() if v is not None}
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise TaskError(f"{path}: not a parquet file sprout can read ({error})") from None


def field_problem(error: ValidationError) -> str:
    """`FIELD: PROBLEM` of a row's first invalid field, as one line of its TaskError."""
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    return f"{field}: {str(first['msg']).removeprefix('Value error, ')}"


def lone_surrogate(data: dict[str, Any]) -> str | None:
    """The first field whose name or value holds a lone surrogate (JSON's `"\\ud800"`):
    such a string cannot be written as UTF-8 (into the store, /tests, a prompt). Values JSON
    has no type for (a parquet file's timestamps) are read as their text."""
    for key, value in data.items():
        try:
            json.dumps({key: value}, ensure_ascii=False, default=str).encode("utf-8")
        except UnicodeEncodeError:
            return key.encode("utf-8", "backslashreplace").decode("ascii", "replace")
    return None


def name_list(value: object) -> object:
    """A list of names, or the string of one as the publishers' harnesses read it (a Python
    literal, which a JSON list of names also is); pydantic then checks the items."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ValueError("expected a list of names, or a string holding one") from None
    if not isinstance(value, list):
        raise ValueError("expected a list of names, or a string holding one")
    return value


def object_value(value: object) -> object:
    """An object, or the text of one as exports of a dataset write it (JSON, or a Python
    dict's repr); pydantic then checks its keys."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            try:
                return ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise ValueError("expected an object, or a string holding one") from None
    return value


def instance_tasks(
    path: Path, make: Callable[[dict[str, Any], str], Task]
) -> list[Task | TaskError]:
    """`make(row, where)` for each row of a file of rows with an `instance_id`, `where`
    being `ID: FILE:LINE` (`?` for an id that cannot be had); a row that cannot be read,
    or holds text no UTF-8 can, is its own TaskError and the others still load."""
    results: list[Task | TaskError] = []
    for where, data in rows(path):
        try:
            if isinstance(data, TaskError):
                raise data
            broken = lone_surrogate(data)
            instance = data.get("instance_id")
            named = isinstance(instance, str) and instance and broken != "instance_id"
            label = instance if named else "?"
            if broken is not None:
                raise TaskError(
                    f"{label}: {where}: {broken}: not valid Unicode (half a surrogate pair)"
                )
            results.append(make(data, f"{label}: {where}"))
        except TaskError as error:
            results.append(error)
    return results
