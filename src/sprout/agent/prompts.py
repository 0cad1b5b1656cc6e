"""The actor's prompts: Jinja templates shipped in the package, overridable per config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sprout.templating import render_template

TEMPLATES = Path(__file__).with_name("templates")
_SETTINGS = frozenset({"call_format", "max_calls", "submit_sentinel"})
VARIABLES = {
    "system": _SETTINGS | {"workdir"},
    "instance": _SETTINGS | {"instruction", "workdir"},
    "observation": _SETTINGS | {"calls"},
    "format_error": _SETTINGS | {"problem"},
}
"""What each template is given: the actor's settings, and its own part of the turn."""


def render(name: str, overrides: dict[str, str], **context: Any) -> str:
    """Render template `name`, from `overrides` when the config supplies one."""
    return render_template(TEMPLATES, VARIABLES, name, overrides.get(name), **context)
