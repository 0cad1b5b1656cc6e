"""The roles' prompts: Jinja templates shipped in the package, each replaceable by a source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sprout.templating import render_template

TEMPLATES = Path(__file__).with_name("templates")
NAMES = ("analyst", "reviewer", "supervisor", "retry")


def render(name: str, source: str | None = None, **context: Any) -> str:
    """Render the packaged template `name`, or `source` (a Jinja template) in its place."""
    return render_template(TEMPLATES, NAMES, name, source, **context)
