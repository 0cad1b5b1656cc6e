"""The roles' prompts: Jinja templates shipped in the package, each replaceable by a source."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).with_name("templates")
NAMES = ("analyst", "reviewer", "retry")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(name: str, source: str | None = None, **context: Any) -> str:
    """Render the packaged template `name`, or `source` (a Jinja template) in its place."""
    if name not in NAMES:
        raise ValueError(f"template {name!r}: expected one of {', '.join(NAMES)}")
    environment = _environment()
    template = (
        environment.from_string(source)
        if source is not None
        else environment.get_template(f"{name}.j2")
    )
    return template.render(**context).strip()
