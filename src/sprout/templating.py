"""Rendering the packaged Jinja prompts, each replaceable by a user's own source.

Strict about undefined names, so a template that names a variable its caller
does not pass fails at once instead of sending the model an empty hole.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jinja2


@cache
def _environment(folder: Path) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render_template(
    folder: Path,
    variables: Mapping[str, frozenset[str]],
    name: str,
    source: str | None,
    **context: Any,
) -> str:
    """Render `folder/name.j2`, or `source` (a Jinja template) in its place.

    `variables` declares what each template is given; a user's source is checked
    against it when the settings load (`sprout.config.check_template`), so the
    declaration must say exactly what callers pass."""
    if name not in variables:
        raise ValueError(f"template {name!r}: expected one of {', '.join(variables)}")
    assert set(context) == variables[name], f"{name}: given {sorted(context)}"
    environment = _environment(folder)
    template = (
        environment.from_string(source)
        if source is not None
        else environment.get_template(f"{name}.j2")
    )
    return template.render(**context).strip()
