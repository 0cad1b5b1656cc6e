"""The size a module and a function may grow to: a file of src/sprout that passes 400 lines
or a function that passes 60 holds more than one job, and the next reader pays for it."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "sprout"
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60


def test_no_source_file_is_over_400_lines():
    long = {
        str(path.relative_to(SOURCE)): lines
        for path in sorted(SOURCE.rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    }
    assert long == {}


def test_no_function_is_over_60_lines():
    """Docstring and signature included, as a reader scrolls them."""
    long = {}
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(SOURCE)}:{node.lineno} {node.name}"] = lines
    assert long == {}
