"""report.html: the viewer as one self-contained file, for sharing a run.

The page, its CSS and its JavaScript are inlined, and the data the API would serve is
embedded as JSON (the summary, every task's tree, and every turn's detail with outputs
capped), so the file opens from disk with no server and no network. The JavaScript is
the same as `sprout view`'s: it reads the embedded data when it finds it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sprout.durable import write_atomically
from sprout.runfolder import RunFolder
from sprout.viewer.data import run_summary, task_tree
from sprout.viewer.server import run_status, static_text
from sprout.viewer.turns import turn_detail

MAX_OUTPUT_CHARS = 4000
"""Per call output kept in the report (the server gives 20,000): the file stays small."""
MAX_DIFF_CHARS = 8000

STYLE_TAG = '<link rel="stylesheet" href="viewer.css">'
SCRIPT_TAG = '<script src="viewer.js"></script>'


def report_data(run: RunFolder) -> dict[str, Any]:
    """Everything the page can ask for: what /api/summary, /api/status, every
    /api/tasks/ID/tree and every /api/turns/ATTEMPT/INDEX of an attempt's own turns give."""
    trees = {task_id: task_tree(run, task_id) for task_id in run.tree.task_ids()}
    turns: dict[str, Any] = {}
    for tree in trees.values():
        for attempt in tree["attempts"]:
            path = run.tree.path(run.tree.attempt(attempt["id"])) if attempt["turns"] else []
            for turn in attempt["turns"]:
                key = f"{attempt['id']}/{turn['index']}"
                turns[key] = turn_detail(
                    run,
                    attempt["id"],
                    turn["index"],
                    max_output_chars=MAX_OUTPUT_CHARS,
                    max_diff_chars=MAX_DIFF_CHARS,
                    path=path,
                )
    return {"summary": run_summary(run), "status": run_status(run), "trees": trees, "turns": turns}


def embed_json(data: Any) -> str:
    """`data` as JSON safe inside a <script> element: every `/` and `<` escaped (both are
    valid JSON escapes), so no `</script>` can end it early and no text in it reads as
    a URL."""
    return json.dumps(data).replace("/", "\\/").replace("<", "\\u003c")


def render(data: dict[str, Any]) -> str:
    """The page with its CSS, JavaScript and `data` inlined."""
    page = static_text("index.html")
    css = static_text("viewer.css")
    js = static_text("viewer.js")
    assert STYLE_TAG in page and SCRIPT_TAG in page, "index.html lost its asset tags"
    page = page.replace(STYLE_TAG, f"<style>\n{css}</style>")
    embedded = f'<script id="sprout-data" type="application/json">{embed_json(data)}</script>'
    return page.replace(SCRIPT_TAG, f"{embedded}\n<script>\n{js}</script>")


def write_report(run: RunFolder) -> Path:
    """Write `RUN_DIR/report.html` (atomically) and return its path."""
    path = run.path / "report.html"
    write_atomically(str(path), render(report_data(run)), durable=False)
    return path
