"""Settings files: one TOML file, one table per part (`[actor]`, `[roles]`).

Every part validates its own table with pydantic; errors name the file and
the field, so a typo is caught before anything runs.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TypeVar

import jinja2
import jinja2.meta
from pydantic import BaseModel, ValidationError

Settings = TypeVar("Settings", bound=BaseModel)


def read_table(path: str | Path, table: str, model: type[Settings]) -> Settings:
    """The `[table]` of TOML file `path` as `model` (its defaults when the table is absent)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{path}: {error}") from None
    try:
        return model.model_validate(data.get(table, {}))
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"{path}: {table}.{field}: {first['msg']}") from None


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
