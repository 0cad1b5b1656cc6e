"""TOML files read one way: settings (one file, one table per part: `[actor]`, `[roles]`)
and the tables of task files (`task.toml`'s `[sprout]`, sidecars, `--images`).

Every table is validated with a pydantic model (`extra="forbid"`, but for Harbor's own
tables of task.toml: `sprout.tasks.sources.harbor_tables`); an error is one line,
`FILE: TABLE.FIELD: PROBLEM`, so a typo is caught before anything runs.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import jinja2
import jinja2.meta
from pydantic import BaseModel, ValidationError

Settings = TypeVar("Settings", bound=BaseModel)


def read_table(path: str | Path, table: str, model: type[Settings]) -> Settings:
    """The `[table]` of TOML file `path` as `model` (its defaults when the table is absent)."""
    return validate_table(read_toml(path).get(table, {}), model, path=path, table=table)


def read_toml(path: str | Path) -> dict[str, Any]:
    """TOML file `path`; a ValueError `FILE: PROBLEM` when it cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"{path}: {error}") from None
    return parse_toml(text, path)


def parse_toml(text: str, path: str | Path) -> dict[str, Any]:
    """`text`, read from `path` by the caller, as TOML; a ValueError `FILE: PROBLEM`."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: {error}") from None


def validate_table(
    value: object, model: type[Settings], *, path: str | Path, table: str
) -> Settings:
    """`value`, the table named `table` in TOML file `path`, as `model`; a ValueError names
    the first field at fault: `FILE: TABLE.FIELD: PROBLEM` (`FILE: TABLE: PROBLEM` when
    `value` is not a table at all)."""
    try:
        return model.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        field = "".join(f".{part}" for part in first["loc"])
        problem = first["msg"].removeprefix("Value error, ")  # pydantic's, not ours
        raise ValueError(f"{path}: {table}{field}: {problem}") from None


def only_tables(
    data: Mapping[str, object], known: Iterable[str], path: str | Path, hint: str
) -> None:
    """Refuse a top-level key of TOML `data` that is not one of the `known` tables: a
    ValueError `FILE: KEY: unknown; HINT` naming the first (sorted)."""
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"{path}: {unknown[0]}: unknown; {hint}")


def check_template(source: str | None, variables: frozenset[str]) -> str | None:
    """A Jinja source that parses and names only `variables`, so a broken template is
    refused when the settings load, not at the first prompt of a run."""
    if source is None:
        return None
    try:
        parsed = jinja2.Environment().parse(source)
    except jinja2.TemplateSyntaxError as error:
        raise ValueError(f"line {error.lineno}: {error.message}") from None
    unknown = sorted(jinja2.meta.find_undeclared_variables(parsed) - variables)
    if unknown:
        raise ValueError(
            f"undefined variable {', '.join(unknown)}; the template is given "
            f"{', '.join(sorted(variables))}"
        )
    return source


def changed_settings(
    stored: Mapping[str, Any], wanted: Mapping[str, Any], tables: Mapping[str, type[BaseModel]]
) -> list[str]:
    """The keys whose values differ between the settings a run was started with (`stored`)
    and those of its `--resume` (`wanted`), sorted. A `tables` entry is read through today's
    model first, so a field added since the run began, at its default, changes nothing:
    a new option of sprout's must not lock every older run out of `--resume`."""
    normal = dict(stored)
    for key, model in tables.items():
        if key in normal:
            try:
                normal[key] = model.model_validate(normal[key]).model_dump(mode="json")
            except ValidationError:  # a field gone or retyped since: a change
                continue
    return sorted(key for key in {*normal, *wanted} if normal.get(key) != wanted.get(key))
