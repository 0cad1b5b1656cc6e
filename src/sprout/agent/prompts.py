"""The actor's prompts: Jinja templates shipped in the package, overridable per config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sprout.templating import render_template

TEMPLATES = Path(__file__).with_name("templates")
NAMES = ("system", "instance", "observation", "format_error")


def render(name: str, overrides: dict[str, str], **context: Any) -> str:
    """Render template `name`, from `overrides` when the config supplies one."""
    return render_template(TEMPLATES, NAMES, name, overrides.get(name), **context)
