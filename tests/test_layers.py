"""The layers of docs/architecture.md's module table: which package may import which.

Each rule is a "must not" of the table, read from every `import` in src/sprout
(also those inside functions, which is where commands import lazily). The direct rules
hold for each import; the few that matter most (the sandbox under everything, models,
roles and train never reaching the sandbox, the command line on top) also hold through
any chain of imports.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.support.repo_paths import SPROUT_SOURCE

EVERYTHING = {
    "agent", "cli", "commands", "cluster", "config", "durable", "edits", "errors", "fences",
    "images", "integrations", "logparsers", "models", "pipeline", "roles", "runfolder",
    "sandbox",
    "search", "task", "tasks", "tasksandbox", "templating", "train", "tree", "verify", "viewer",
    "workspace",
}  # fmt: skip
ABOVE_TASKS = {
    "agent", "models", "roles", "search", "train", "viewer", "tree", "verify", "tasksandbox",
}  # fmt: skip
NEUTRAL = {"durable", "workspace", "errors"}
"""Leaves under every layer (durable writes and file locks; the actor's workspace protocol,
which the sandbox implements; the one base of sprout's errors): they import nothing of
sprout but the error base."""
TREE_ONLY = {"models", "agent", "roles", "search", "train", "viewer", "verify", "tasks", "sandbox"}
"""What the rollout tree, its records and its database never import."""
TASK_WORK = {"sandbox", "tasks", "verify", "task"}
"""What a task's sandbox work is made of: its store and forks, its checkpoint 0, its verifier,
the task model."""
FORBIDDEN: dict[str, set[str]] = {
    "errors": EVERYTHING - {"errors"},
    "durable": EVERYTHING - {"durable", "errors"},
    "workspace": EVERYTHING - {"workspace", "errors"},
    "sandbox": EVERYTHING - {"sandbox"} - NEUTRAL,  # nothing of sprout above it
    "images": EVERYTHING - {"images", "sandbox"} - NEUTRAL,  # nothing about tasks or tests
    "task": EVERYTHING - {"task", "errors"},
    # test runners' logs read into statuses: below the task sources and the verifier
    "logparsers": EVERYTHING - {"logparsers"},
    "tasks": ABOVE_TASKS | {"pipeline", "runfolder"},  # tasks run nothing of a run
    "models": {"sandbox", "tasks", "agent", "tree", "search", "roles", "verify"},
    # the tree's verbs (never its database: see TREE_FLOORS); a Workspace, not the sandbox
    "agent": {"sandbox", "search", "roles", "train", "viewer"},
    # no search policy; the task-side service runs the verifier, not the other way
    "verify": {"search", "roles", "agent", "models", "train", "viewer", "tasksandbox"},
    # no solution, no hidden tests, no commands: what a turn changed comes from the tree
    "roles": {"tasks", "verify", "search", "train", "viewer", "sandbox"},
    "tree": TREE_ONLY,
    # schedules do not parse model text; the cluster's sandboxes are handed to search
    "search": {"cluster", "fences", "train", "viewer"},
    # a task's sandbox work in one store, shared by search's local path and the cluster's
    # actor: below both, so neither imports the other
    "tasksandbox": EVERYTHING - {"tasksandbox"} - TASK_WORK - NEUTRAL,
    # a task's sandboxes on a node: the filesystem half, never the tree, models or search
    "cluster": EVERYTHING - {"cluster", "tasksandbox", "images"} - TASK_WORK - NEUTRAL,
    # no sandbox, no rollouts: it learns from the tree (the pipeline plays the rollouts)
    "train": {"viewer", "verify", "tasks", "sandbox", "search", "runfolder"},
}
"""Package (or top-level module) -> the sprout packages it must not import."""
ONLY_FROM_THE_COMMAND_LINE = {"cli", "commands"}
ONLY_FROM_ABOVE = {
    "pipeline": ONLY_FROM_THE_COMMAND_LINE,
    "integrations": ONLY_FROM_THE_COMMAND_LINE,
}
"""Orchestration above search and train, used by the command line alone."""
NEVER_REACHED: dict[str, set[str]] = {
    name: set(ONLY_FROM_THE_COMMAND_LINE) for name in EVERYTHING - ONLY_FROM_THE_COMMAND_LINE
}
"""Package -> the sprout packages it must not reach through any chain of imports: nothing
below the command line reaches it, and:"""
NEVER_REACHED["sandbox"] |= EVERYTHING - {"sandbox"} - NEUTRAL
NEVER_REACHED["models"] |= {"sandbox"}
NEVER_REACHED["roles"] |= {"sandbox"}  # what a turn changed is read from the tree
NEVER_REACHED["train"] |= {"sandbox"}  # it learns from the tree; it runs nothing
CONTEXT_HALF = {"models", "agent", "roles", "train", "tree"}
FILESYSTEM_HALF = {"sandbox", "images", "tasks", "verify", "tasksandbox", "cluster"}
"""docs/architecture.md's two halves of a checkpoint: they meet only above both (search,
the run folder, the pipeline, the command line); the actor reaches a sandbox through the
`Workspace` protocol alone."""
for name in CONTEXT_HALF:
    NEVER_REACHED[name] |= FILESYSTEM_HALF
for name in FILESYSTEM_HALF:
    NEVER_REACHED[name] |= CONTEXT_HALF


def imports(path: Path) -> list[tuple[str, str | None]]:
    """(sprout module imported, name imported from it or None) for every import in `path`."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.module, alias.name) for alias in node.names]
    # `from sprout import runfolder` imports the module sprout.runfolder
    found = [
        (f"sprout.{name}", None) if module == "sprout" else (module, name) for module, name in found
    ]
    return [(module, name) for module, name in found if module.startswith("sprout.")]


def unit(path: Path) -> str:
    """The package a source file belongs to (or its own name, for a top-level module)."""
    return path.relative_to(SPROUT_SOURCE).with_suffix("").parts[0]


SOURCES = sorted(
    p for p in SPROUT_SOURCE.rglob("*.py") if p.name != "__init__.py" or p.parent != SPROUT_SOURCE
)


def test_every_package_is_known():
    assert {unit(p) for p in SOURCES} - {"__init__"} == EVERYTHING


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SPROUT_SOURCE)))
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
        users = ONLY_FROM_ABOVE.get(target)
        assert users is None or mine in users, f"{module} is imported only from {sorted(users)}"


def module_of(path: Path, source: Path = SPROUT_SOURCE) -> str:
    parts = path.relative_to(source.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def import_graph() -> dict[str, list[str]]:
    """`graph_of` src/sprout, read once."""
    return graph_of(SPROUT_SOURCE)


def graph_of(source: Path) -> dict[str, list[str]]:
    """Each sprout module (of the package at `source`) -> the sprout modules it imports.
    `from package import name` imports the package's face (its `__init__`, and so all that
    imports) and, when `name` is a module, that module too; `from package.module import
    name` imports the module (its package's `__init__` runs first where nothing ran it yet,
    which `chain_to` follows; the circle check does not, since every module of a package
    would then be in a circle with a face that imports it)."""
    modules = {module_of(p, source): p for p in source.rglob("*.py")}
    graph: dict[str, list[str]] = {}
    for name, path in modules.items():
        found: list[str] = []
        for module, what in imports(path):
            if module != name:  # a package's `__init__` importing its own modules
                found.append(module)
            if f"{module}.{what}" in modules:
                found.append(f"{module}.{what}")
        graph[name] = [m for m in dict.fromkeys(found) if m in modules]
    return graph


def chain_to(start: str, units: set[str]) -> list[str] | None:
    """The shortest chain of imports from module `start` to a module of one of `units`
    (packages' `__init__` included, and imports inside functions), or None."""
    graph = import_graph()
    came_from: dict[str, str | None] = {start: None}
    todo = [start]
    while todo:
        module = todo.pop(0)
        if module != start and module.split(".")[1] in units:
            path = [module]
            while (previous := came_from[path[-1]]) is not None:
                path.append(previous)
            return path[::-1]
        parts = module.split(".")
        # importing a.b.c runs a.b's __init__ first
        parents = [".".join(parts[:n]) for n in range(2, len(parts))]
        for name in [*parents, *graph.get(module, [])]:
            if name in graph and name not in came_from:
                came_from[name] = module
                todo.append(name)
    return None


def shortest_cycle(start: str, edges: dict[str, list[str]]) -> list[str]:
    """The shortest chain of `edges` from `start` back to itself (ending where it starts),
    or [] when there is none."""
    came_from: dict[str, str] = {}
    todo = [start]
    while todo:
        module = todo.pop(0)
        for name in edges[module]:
            if name == start:
                path = [start, module]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return path[::-1]
            if name not in came_from:
                came_from[name] = module
                todo.append(name)
    return []


def circles(modules: Iterable[str], graph: dict[str, list[str]]) -> set[str]:
    """The shortest circle of imports through each of `modules`, each written one way."""
    found: set[str] = set()
    for module in modules:
        if cycle := shortest_cycle(module, graph)[:-1]:
            first = cycle.index(min(cycle))
            found.add(" -> ".join([*cycle[first:], *cycle[:first], min(cycle)]))
    return found


@pytest.mark.parametrize("unit_name", sorted(EVERYTHING))
def test_no_circle_of_imports(unit_name: str):
    """Modules import each other one way (imports inside functions and under
    TYPE_CHECKING too, and through a package's face: `from sprout.images import chains`
    runs `sprout/images/__init__.py` and all it imports): each can be read, and changed,
    knowing only those below it."""
    mine = [module_of(p) for p in SOURCES if unit(p) == unit_name]
    found = circles(mine, import_graph())
    assert not found, "circles of imports:\n" + "\n".join(sorted(found))


def test_the_check_finds_circles():
    """The check itself: the shortest way back, a module that imports itself, and none."""
    edges = {"a": ["b", "c"], "b": ["c"], "c": ["a", "c"], "d": ["a"]}
    assert shortest_cycle("a", edges) == ["a", "c", "a"]
    assert shortest_cycle("c", edges) == ["c", "c"]
    assert shortest_cycle("d", edges) == []


def test_the_check_finds_a_circle_through_a_package_face(tmp_path: Path):
    """What images/pull.py did: `from sprout.images import chains` runs the package's
    `__init__`, which imports `names`, which imports `pull`. Naming the module itself
    (`from sprout.images.chains import ...`) leans on no face, and the circle is gone;
    a package's `__init__` importing its own modules is no circle either."""
    source = tmp_path / "sprout"
    files = {
        "__init__.py": "",
        "images/__init__.py": "from sprout.images import names\n",
        "images/names.py": "from sprout.images.pull import pull\n",
        "images/pull.py": "from sprout.images import chains\n",
        "images/chains.py": "",
    }
    for name, text in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text, encoding="utf-8")
    assert circles(["sprout.images.pull"], graph_of(source)) == {
        "sprout.images -> sprout.images.names -> sprout.images.pull -> sprout.images"
    }
    (source / "images/pull.py").write_text("from sprout.images.chains import link\n")
    assert circles(["sprout.images.pull"], graph_of(source)) == set()


@pytest.mark.parametrize("unit_name", sorted(NEVER_REACHED))
def test_no_chain_of_imports_crosses_a_layer(unit_name: str):
    """Not even through another package: e.g. train -> runfolder -> sandbox is refused."""
    forbidden = NEVER_REACHED[unit_name] - {unit_name}
    for path in SOURCES:
        if unit(path) == unit_name:
            found = chain_to(module_of(path), forbidden)
            assert found is None, f"{unit_name} must not reach: {' -> '.join(found)}"


def test_the_check_follows_chains():
    """The check itself: it sees through function-level imports and package __init__s."""
    # a function-level `from sprout.pipeline.check_record import ...`
    assert chain_to("sprout.commands.tasks", {"pipeline"}) == [
        "sprout.commands.tasks",
        "sprout.pipeline.check_record",
    ]
    # what train/export.py did before the run folder moved up to the pipeline
    assert chain_to("sprout.pipeline.export", {"sandbox"}) == [
        "sprout.pipeline.export",
        "sprout.runfolder",
        "sprout.sandbox",
    ]
    assert chain_to("sprout.search.runner", {"sandbox"}) is not None
    # a leaf: errors.py imports nothing of sprout (durable.py imports it, for SPROUT_CACHE's error)
    assert chain_to("sprout.errors", EVERYTHING - {"errors"}) is None
    assert chain_to("sprout.durable", EVERYTHING - {"durable", "errors"}) is None


ONE_SURFACE = ["sandbox", "tree"]
"""Packages whose face (`sprout.sandbox`, `sprout.tree`) is their one surface."""


@pytest.mark.parametrize("package", ONE_SURFACE)
def test_outside_a_package_only_its_face_is_imported(package: str):
    """A module elsewhere in src/sprout that imported one of the sandbox's sub-packages or
    modules would pin the sandbox's inside in place; one that imported the tree's database
    (`sprout.tree.database`) would write the run beside the tree, which is its only writer
    (everything else reads and writes the run through the tree's verbs, so its schema can
    change under one caller)."""
    reaching_in = [
        f"{path.relative_to(SPROUT_SOURCE)}: {module}"
        for path in SOURCES
        if unit(path) != package
        for module, _ in imports(path)
        if module.startswith(f"sprout.{package}.")
    ]
    assert reaching_in == []


SANDBOX_FLOORS: list[set[str]] = [
    {"errors", "teardown", "system_tools"},  # its errors; the teardown thread; where tools are
    {"storefs", "rootfs", "network"},  # the disk under a store; the image cache; networks
    {"types", "jail"},  # a sandbox's settings and results; what holds a hostile root
    {"layers"},  # the layer store and its helpers
    {"backends"},  # where calls run: overlay or copy
    {"sandbox", "local_workspace", "replay", "probe"},  # a sandbox; `sprout doctor`'s measures
    {"__init__"},  # `sprout.sandbox`, the one surface
]
"""sandbox/'s floors, bottom first: its top-level modules and sub-packages by name. A module
imports only its own floor and those below (so through any chain too)."""
TREE_FLOORS: list[set[str]] = [
    {"records", "meta"},  # the plain records; the typed meta
    {"database"},  # the SQLite tables, which persist them
    {"rollout"},  # the tree, built on the tables
    {"__init__"},  # `sprout.tree`, the one surface
]
"""tree/'s floors, bottom first, read as the sandbox's are: the database never imports the
tree above it, the records and the meta nothing of the tree."""


def _part(package: str, module: str) -> str | None:
    """The sub-package or top-level module of `package` that `module` is (or is in), or
    None when it is outside `package`."""
    parts = module.split(".")
    if parts[:2] != ["sprout", package]:
        return None
    return parts[2] if len(parts) > 2 else "__init__"


def _upward_imports(package: str, floors: list[set[str]]) -> list[str]:
    """The imports inside `package` from a floor to one above it (a package's face counts
    as its floor)."""
    floor = {part: n for n, parts in enumerate(floors) for part in parts}
    return [
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if (mine := _part(package, module)) is not None
        for target in targets
        if (theirs := _part(package, target)) is not None and floor[theirs] > floor[mine]
    ]


@pytest.mark.parametrize(
    ("package", "floors"), [("sandbox", SANDBOX_FLOORS), ("tree", TREE_FLOORS)]
)
def test_every_part_of_a_package_is_on_a_floor(package: str, floors: list[set[str]]):
    parts = {_part(package, m) for m in import_graph()} - {None}
    assert parts == set().union(*floors)


def test_the_sandbox_floors_import_one_way():
    """`sprout.sandbox`'s inside runs one way: the jail never imports the layer store or a
    sandbox, the network never the jail."""
    assert _upward_imports("sandbox", SANDBOX_FLOORS) == []


def test_the_tree_floors_import_one_way():
    """`sprout.tree`'s inside runs one way: the tables never import the tree built on them;
    the records import nothing of sprout but `Change`."""
    assert _upward_imports("tree", TREE_FLOORS) == []
    records = [t for t in import_graph()["sprout.tree.records"] if not t.startswith("sprout.tree")]
    assert records == ["sprout.workspace"]


TASK_WINGS: dict[str, set[str]] = {
    "sources": {"setup"},  # a source reads a format; it never builds checkpoint 0
    "dockerfile": {"sources", "setup"},  # reading a Dockerfile knows no source, runs nothing
    "setup": {"sources"},  # checkpoint 0 is built from a Task, whatever its source
}
"""tasks/'s wings -> the wings each must not import (checked through chains too)."""
TASK_LEAVES = {"files", "digest", "imageref"}
"""The modules at tasks/'s top that every wing uses, and which import no wing."""


def _task_part(module: str) -> str | None:
    """The wing (or top-level module) of tasks/ that `module` belongs to, or None."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "tasks" else None


def test_the_task_wings_follow_their_layers():
    """tasks/'s wings import one way, through any chain: a source never reaches the
    set-up of checkpoint 0, the Dockerfile's reading neither of them."""
    graph = import_graph()
    for module in graph:
        mine = _task_part(module)
        if mine not in TASK_WINGS and mine not in TASK_LEAVES:
            continue
        banned = TASK_WINGS.get(mine, set(TASK_WINGS))
        seen, todo = {module}, [module]
        while todo:
            for name in graph.get(todo.pop(), []):
                if name in graph and name not in seen and _task_part(name) not in banned:
                    seen.add(name)
                    todo.append(name)
                assert _task_part(name) not in banned, f"{module} reaches {name}"
