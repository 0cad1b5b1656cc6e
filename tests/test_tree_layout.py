"""The test tree's own layout: `tests/` mirrors `src/sprout/`, and what the tests share lives
in `tests/support/`, so that a newcomer finds a module's tests where the module is and a
helper in one place.

A test module (or conftest.py) that imported another test module would run that module's
imports, fixtures and module-level skips too, and tie the two files together: moving or
renaming one breaks the other. So the only `tests.*` imports are of `tests.support` (and
of a module's own package), and `tests.support` imports nothing else of the tests either;
fixtures reach other folders by being imported into a conftest.py, which pytest reads.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.repo_paths import REPO, SPROUT_SOURCE, TESTS

SUPPORT = "tests.support"
REPO_CHECKS = {
    "test_layers.py",
    "test_code_shape.py",
    "test_example_tasks.py",
    "test_tree_layout.py",
    "test_doc_messages.py",
    "test_sprout_variables.py",
    "test_readme.py",
    "test_packaging.py",
}
"""Top-level test modules that check the repository (its import layers, its example tasks,
this layout, the messages its docs quote, the SPROUT_* variables its modules read, its
README and links, its wheel and sdist) rather than one module of src/sprout."""


def package_folders() -> list[Path]:
    """tests/ and every folder under it that is a package (a folder of data files is not)."""
    return [TESTS, *sorted(p.parent for p in TESTS.rglob("*/__init__.py"))]


def module_name(path: Path) -> str:
    """`tests/sandbox/conftest.py` -> tests.sandbox.conftest; a folder -> its package."""
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    """Whether `name` (tests.x.y) is a module or package of the test tree."""
    path = REPO.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported_test_tree_modules(source: str, package: str) -> list[str]:
    """The modules of the `tests` package that `source`, a module of `package`, imports:
    every import (inside functions too), relative ones resolved; `from tests.x import y`
    is `tests.x.y` where y is a module, else `tests.x` (a name of its __init__)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                found.append(f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base)
    return [name for name in found if name == "tests" or name.startswith("tests.")]


def allowed(imported: str, package: str) -> bool:
    """tests.support and what is under it, or the importer's own package (its __init__)."""
    return imported in (SUPPORT, package) or imported.startswith(f"{SUPPORT}.")


def test_every_test_folder_is_a_package():
    """Test modules are named by their path (`tests.sandbox.layers.test_export`, not
    `test_export`), so two folders may each hold a test_export.py, and the check of imports
    below sees every folder that holds tests."""
    folders = {p.parent for p in TESTS.rglob("*.py") if p.name.startswith(("test_", "conftest"))}
    folders |= {p.parent for p in (TESTS / "support").rglob("*.py")}
    assert sorted(str(f.relative_to(REPO)) for f in folders - set(package_folders())) == []


def test_tests_import_nothing_of_the_tests_but_tests_support():
    """Every module of the test tree: test modules, conftest.py files and tests/support's."""
    modules = [p for folder in package_folders() for p in sorted(folder.glob("*.py"))]
    assert len(modules) > 100, "the check found the tests"
    wrong = []
    for path in modules:
        package = module_name(path.parent)
        found = imported_test_tree_modules(path.read_text(encoding="utf-8"), package)
        wrong += [
            f"{path.relative_to(REPO)}: {name}"
            for name in dict.fromkeys(found)
            if not allowed(name, package)
        ]
    assert wrong == [], "import these from tests/support instead:\n" + "\n".join(wrong)


def test_the_import_check_reads_every_form():
    """The check itself: plain, from-, relative and function-level imports, a module named
    in `from package import module`, and a name of the importer's own package."""
    source = (
        "import tests.agent.helpers\n"
        "from tests import conftest\n"
        "from . import conftest as here\n"
        "from .conftest import NOBODY\n"
        "from tests.sandbox import SOMETHING\n"
        "def f():\n"
        "    from tests.support import repo_paths\n"
        "    from tests.support.repo_paths import REPO\n"
    )
    found = imported_test_tree_modules(source, "tests.sandbox")
    assert found == [
        "tests.agent.helpers",
        "tests.conftest",
        "tests.sandbox.conftest",
        "tests.sandbox.conftest",
        "tests.sandbox",
        "tests.support.repo_paths",
        "tests.support.repo_paths",
    ]
    assert [allowed(name, "tests.sandbox") for name in found] == [False] * 4 + [True] * 3


def test_tests_mirror_the_source():
    """Each test package is a package of src/sprout (tests/sandbox/network: sprout.sandbox.
    network), and each top-level test module a top-level module's (test_runfolder.py: runfolder.py),
    but for tests/support and the checks of the whole repository."""
    strays = [
        str(folder.relative_to(REPO))
        for folder in package_folders()[1:]
        if folder.relative_to(TESTS).parts[0] != "support"
        and not (SPROUT_SOURCE / folder.relative_to(TESTS) / "__init__.py").is_file()
    ]
    strays += [
        str(path.relative_to(REPO))
        for path in sorted(TESTS.glob("test_*.py"))
        if path.name not in REPO_CHECKS
        and not (SPROUT_SOURCE / path.name.removeprefix("test_")).is_file()
    ]
    assert strays == [], "tests of no module of src/sprout by that name"
