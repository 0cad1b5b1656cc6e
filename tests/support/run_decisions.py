"""What a run of the two-edit task decided, to compare a run that was killed and resumed
with one that was not: equal decisions mean the interruption changed nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.support.taskfolders import TWO_EDITS


def decisions(out: Path) -> tuple[list[tuple], dict]:
    """What a run decided: each attempt's method, origin, outcome and commands, and
    results.json without its clock readings and token totals (a killed call's tokens were
    spent, so a resumed run counts them)."""
    with sqlite3.connect(out / "sprout.db") as connection:
        rows = connection.execute(
            "SELECT a.method, a.kind, a.parent_id, a.boundary, a.status, a.reward, "
            "group_concat(t.text, '|') FROM attempts a LEFT JOIN turns t ON t.attempt_id = a.id "
            "GROUP BY a.id ORDER BY a.method, a.id"
        ).fetchall()
    content = json.loads((out / "results.json").read_text())
    for figures in [*content["methods"].values(), *content["tasks"][TWO_EDITS].values()]:
        figures.pop("wall_s", None)
        figures.pop("tokens")
    content.pop("isolation", None)
    return rows, content
