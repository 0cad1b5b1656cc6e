"""The layers of DESIGN.md's module table: which package may import which.

Each rule is a "must not" of the table, read from every `import` in src/sprout
(also those inside functions, which is where commands import lazily).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "sprout"
EVERYTHING = {
    "agent", "cli", "commands", "config", "durable", "edits", "fences", "images", "models", "roles",
    "runfolder", "sandbox", "search", "store", "task", "taskcheck", "tasks", "templating",
    "train", "tree", "verify", "viewer",
}  # fmt: skip
ABOVE_TASKS = {"agent", "models", "roles", "search", "train", "viewer", "store", "tree", "verify"}
NEUTRAL = {"durable"}
"""Leaves under every layer (durable writes, file locks): they import nothing of sprout."""
FORBIDDEN: dict[str, set[str]] = {
    "durable": EVERYTHING - {"durable"},
    "sandbox": EVERYTHING - {"sandbox"} - NEUTRAL,  # nothing of sprout above it
    "images": EVERYTHING - {"images", "sandbox"} - NEUTRAL,  # nothing about tasks or tests
    "task": EVERYTHING - {"task"},
    "tasks": ABOVE_TASKS | {"taskcheck", "runfolder"},  # tasks run nothing of a run
    "models": {"sandbox", "tasks", "agent", "tree", "store", "search", "roles", "verify"},
    "agent": {"store", "search", "roles", "train", "viewer"},  # the tree's verbs, not the store
    "verify": {"search", "roles", "agent", "models", "train", "viewer"},  # no search policy
    "roles": {"tasks", "verify", "search", "train", "viewer"},  # no solution, no hidden tests
    "tree": {"models", "agent", "roles", "search", "train", "viewer", "verify", "tasks"},
    "store": {"models", "agent", "roles", "search", "train", "viewer", "verify", "tasks"},
    "search": {"fences", "train", "viewer"},  # schedules do not parse model text
    "train": {"viewer", "verify", "tasks"},
}
"""Package (or top-level module) -> the sprout packages it must not import."""
NO_EXECUTION = {"roles", "train"}
"""Packages that must not run commands: they may read layers, never open a Sandbox."""
ONLY_FROM_THE_COMMAND_LINE = {"cli", "commands"}


def imports(path: Path) -> list[tuple[str, str | None]]:
    """(sprout module imported, name imported from it or None) for every import in `path`."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.module, alias.name) for alias in node.names]
    return [(module, name) for module, name in found if module.startswith("sprout.")]


def unit(path: Path) -> str:
    """The package a source file belongs to (or its own name, for a top-level module)."""
    return path.relative_to(SOURCE).with_suffix("").parts[0]


SOURCES = sorted(p for p in SOURCE.rglob("*.py") if p.name != "__init__.py" or p.parent != SOURCE)


def test_every_package_is_known():
    assert {unit(p) for p in SOURCES} - {"__init__"} == EVERYTHING


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SOURCE)))
def test_imports_follow_the_layers(path: Path):
    mine = unit(path)
    for module, name in imports(path):
        target = module.split(".")[1]
        if target == mine:
            continue
        assert target not in FORBIDDEN.get(mine, set()), f"{mine} must not import {module}"
        assert target not in ONLY_FROM_THE_COMMAND_LINE or mine in ONLY_FROM_THE_COMMAND_LINE, (
            f"{module} is the command line; nothing below it imports it"
        )
        if mine in NO_EXECUTION:
            assert module != "sprout.sandbox.sandbox" and name != "Sandbox", (
                f"{mine} must not run commands (it imports {name or module})"
            )
