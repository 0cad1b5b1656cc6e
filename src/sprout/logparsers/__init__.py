"""Test runners' logs read into each test's status, by the names datasets give their parsers.

A SWE-rebench V2 row names the parser of its repository's test runner
(`install_config.log_parser`: `parse_log_gotest`, `parse_log_cargo`, `parse_java_mvn`, ...)
from its publisher's registry. Where the `swebench` package has a parser of that name, it is
the package's (the publisher's registry grew from it), unless the publisher revised how it
reads a log (`revised`); the others are written here, one module per family of runners
(`jvm`, `native`, `functional`, `scripting`), from the publisher's description of each
runner's log, and tested on logs of that runner. Below both the task
sources (a row naming a parser nobody has is a bad row, said at load) and the verifier
(which reads the log with it).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Any

from sprout.logparsers import functional, jvm, native, revised, scripting
from sprout.logparsers.common import Parser, Statuses

WRITTEN_HERE: dict[str, Parser] = {
    **jvm.PARSERS,
    **native.PARSERS,
    **functional.PARSERS,
    **scripting.PARSERS,
    **revised.PARSERS,
}
SWEBENCH = "the swebench package (pip install 'sprout-rl[swebench]')"


def find(name: str) -> Parser | None:
    """The parser of that name: sprout's own where it has one, else the `swebench` package's."""
    if name in WRITTEN_HERE:
        return WRITTEN_HERE[name]
    package = _package_parsers().get(name)
    return None if package is None else functools.partial(_call_package, package)


def require(name: str) -> str:
    """`name`, when `find` knows it; else the ValueError a row's field check reports."""
    if find(name) is None:
        raise ValueError(
            f"{name!r}: no parser of that name, neither sprout's own nor the swebench "
            "package's (docs/tasks.md lists them)"
        )
    return name


def where(name: str) -> str:
    """Who wrote the parser `name`, for diagnostics: sprout or the package (with its version)."""
    if name not in WRITTEN_HERE and name in _package_parsers():
        from importlib import metadata

        return f"swebench {metadata.version('swebench')}"
    return "sprout"


@functools.cache
def _package_parsers() -> dict[str, Any]:
    """The `swebench` package's parsers by name (none when it is not installed)."""
    try:
        package = importlib.import_module("swebench.harness.log_parsers")
    except ImportError:
        return {}
    found: dict[str, Any] = {}
    for module in pkgutil.iter_modules(package.__path__):
        loaded = importlib.import_module(f"{package.__name__}.{module.name}")
        found.update(
            (name, value)
            for name, value in vars(loaded).items()
            if name.startswith("parse") and callable(value)
        )
    return found


def _call_package(parser: Any, log: str) -> Statuses:
    """The package's parsers take a TestSpec too; a dataset's harness calls them on the whole
    log with none of its fields mattering, so an empty one stands in."""
    from swebench.types import TestSpec

    spec = TestSpec(
        instance_id="",
        image="",
        eval_script_list=[],
        repo="",
        version="",
        FAIL_TO_PASS=[],
        PASS_TO_PASS=[],
        log_parser="",
    )
    return dict(parser(log, spec))
