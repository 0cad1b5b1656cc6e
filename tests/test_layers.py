"""The layers of DESIGN.md's module table: which package may import which.

Each rule is a "must not" of the table, read from every `import` in src/sprout
(also those inside functions, which is where commands import lazily).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "sprout"
EVERYTHING = {
    "agent", "cli", "commands", "config", "durable", "edits", "fences", "images", "models",
    "records", "roles", "runfolder", "sandbox", "search", "store", "task", "taskcheck", "tasks",
    "templating", "train", "tree", "verify", "viewer", "workspace",
}  # fmt: skip
ABOVE_TASKS = {"agent", "models", "roles", "search", "train", "viewer", "store", "tree", "verify"}
NEUTRAL = {"durable", "workspace"}
"""Leaves under every layer (durable writes and file locks; the actor's workspace protocol,
which the sandbox implements): they import nothing of sprout."""
TREE_ONLY = {"models", "agent", "roles", "search", "train", "viewer", "verify", "tasks", "sandbox"}
"""What the rollout tree, its records and its store never import."""
FORBIDDEN: dict[str, set[str]] = {
    "durable": EVERYTHING - {"durable"},
    "workspace": EVERYTHING - {"workspace"},
    "sandbox": EVERYTHING - {"sandbox"} - NEUTRAL,  # nothing of sprout above it
    "images": EVERYTHING - {"images", "sandbox"} - NEUTRAL,  # nothing about tasks or tests
    "task": EVERYTHING - {"task"},
    "tasks": ABOVE_TASKS | {"taskcheck", "runfolder"},  # tasks run nothing of a run
    "models": {"sandbox", "tasks", "agent", "tree", "store", "search", "roles", "verify"},
    # the tree's verbs, not the store; a Workspace, not the sandbox
    "agent": {"store", "sandbox", "search", "roles", "train", "viewer"},
    "verify": {"search", "roles", "agent", "models", "train", "viewer"},  # no search policy
    # no solution, no hidden tests, no commands: what a turn changed comes from the tree
    "roles": {"tasks", "verify", "search", "train", "viewer", "sandbox", "store"},
    "records": EVERYTHING - {"records", "workspace"},
    "tree": TREE_ONLY,
    "store": TREE_ONLY | {"tree"},  # the tree calls the store, never the other way
    "search": {"fences", "train", "viewer"},  # schedules do not parse model text
    "train": {"viewer", "verify", "tasks", "sandbox", "store"},  # no sandbox: it runs nothing
}
"""Package (or top-level module) -> the sprout packages it must not import."""
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
    for module, _ in imports(path):
        target = module.split(".")[1]
        if target == mine:
            continue
        assert target not in FORBIDDEN.get(mine, set()), f"{mine} must not import {module}"
        assert target not in ONLY_FROM_THE_COMMAND_LINE or mine in ONLY_FROM_THE_COMMAND_LINE, (
            f"{module} is the command line; nothing below it imports it"
        )


def module_of(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def import_graph() -> dict[str, list[str]]:
    """Each sprout module -> the sprout modules it imports."""
    return {module_of(p): [m for m, _ in imports(p)] for p in SOURCE.rglob("*.py")}


def reached(start: str) -> set[str]:
    """Every sprout module that importing `start` can import, through any chain (packages'
    `__init__` included, and imports inside functions)."""
    graph = import_graph()
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        parts = module.split(".")
        for n in range(2, len(parts) + 1):  # importing a.b.c runs a.b's __init__ first
            name = ".".join(parts[:n])
            if name in graph and name not in seen:
                seen.add(name)
                todo += graph[name]
    return seen


def test_the_roles_never_reach_the_sandbox():
    """Not even through another package: what a turn changed is read from the tree."""
    for path in sorted((SOURCE / "roles").glob("*.py")):
        found = sorted(m for m in reached(module_of(path)) if m.startswith("sprout.sandbox"))
        assert not found, f"{module_of(path)} reaches {found[0]}"


def test_the_tree_is_the_only_writer():
    """Only the tree holds the store (the run folder opens it and hands it over): everything
    else reads and writes the run through the tree's verbs."""
    holders = {
        path.relative_to(SOURCE).as_posix()
        for path in SOURCES
        if ("sprout.store", "Store") in imports(path)
    }
    assert holders <= {"tree.py", "runfolder.py"}
    for path in SOURCES:
        if path.name != "tree.py":
            tree = ast.parse(path.read_text(encoding="utf-8"))
            reads = [
                n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "_store"
            ]
            assert not reads, f"{path.relative_to(SOURCE)} reaches into the tree's store"
