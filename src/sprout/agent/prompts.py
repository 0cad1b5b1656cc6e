"""The actor's prompts: Jinja templates shipped in the package, overridable per config."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).with_name("templates")
NAMES = ("system", "instance", "observation", "format_error")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(name: str, overrides: dict[str, str], **context: Any) -> str:
    """Render template `name`, from `overrides` when the config supplies one."""
    if name not in NAMES:
        raise ValueError(f"template {name!r}: expected one of {', '.join(NAMES)}")
    environment = _environment()
    source = overrides.get(name)
    template = (
        environment.from_string(source)
        if source is not None
        else environment.get_template(f"{name}.j2")
    )
    return template.render(**context).strip()
