"""The roles' prompts: Jinja templates shipped in the package, each replaceable by a source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sprout.templating import render_template

TEMPLATES = Path(__file__).with_name("templates")
_PLANNING = frozenset(
    {
        "instruction",
        "workdir",
        "candidates",
        "history",
        "history_omitted",
        "branches",
        "max_calls",
        "call_format",
    }
)
VARIABLES = {
    "analyst": frozenset(
        {
            "instruction",
            "workdir",
            "attempt",
            "last",
            "path",
            "patch",
            "diagnostics",
            "call_format",
            "max_boundaries",
        }
    ),
    "reviewer": _PLANNING,
    "supervisor": _PLANNING,
    "retry": frozenset({"problem"}),
}
"""What each template is given (the supervisor, the reviewer's prompt for Shepherd)."""


def render(name: str, source: str | None = None, **context: Any) -> str:
    """Render the packaged template `name`, or `source` (a Jinja template) in its place."""
    return render_template(TEMPLATES, VARIABLES, name, source, **context)
