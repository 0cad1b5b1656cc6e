"""The specification tables of SWE-Gym's fork of SWE-bench's harness, read from a checkout of
it (`SWE-Gym/SWE-Bench-Fork`) that the user names with `--swe-gym DIR`.

SWE-Gym's rows carry no harness specification: the fork holds it, per repository and
version (`MAP_REPO_VERSION_TO_SPECS`: the test command, the install and eval commands) and
per repository (`MAP_REPO_TO_PARSER`: the log parser). The tables are Python, built by the
fork's modules, so they are read by running those two modules of the checkout in a child
process (`child_python`: its own interpreter, isolated from sprout's imports, with a time
limit), which prints them as JSON; the fork's package entry points, which need Docker, are not run.
Nothing of the fork is copied into sprout.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sprout.task import TaskError
from sprout.tasks.sources.child_python import ChildFailed, run_child

CONSTANTS = Path("swebench/harness/constants.py")
PARSERS = Path("swebench/harness/log_parsers.py")
READER = """
import json, runpy, sys, types
root = sys.argv[1]
constants = runpy.run_path(root + "/swebench/harness/constants.py")
module = types.ModuleType("swebench.harness.constants")
module.__dict__.update(constants)
sys.modules.update({"swebench": types.ModuleType("swebench"),
                    "swebench.harness": types.ModuleType("swebench.harness"),
                    "swebench.harness.constants": module})
parsers = runpy.run_path(root + "/swebench/harness/log_parsers.py")
specs = {repo: {str(version): spec for version, spec in versions.items()}
         for repo, versions in constants["MAP_REPO_VERSION_TO_SPECS"].items()}
named = {repo: parser.__name__ for repo, parser in parsers["MAP_REPO_TO_PARSER"].items()}
json.dump({"specs": specs, "parsers": named}, sys.stdout, default=str)
"""
"""Run as `python -I -c READER ROOT`: the fork's constants, then its parsers' module over
them, the tables out as JSON."""


@dataclass(frozen=True)
class ForkTables:
    """Each repository's specification per version and its parser's name (keys lower-cased,
    as the fork keys them)."""

    folder: Path
    specs: dict[str, dict[str, dict[str, Any]]]
    parsers: dict[str, str]


@functools.cache
def read_fork(folder: Path) -> ForkTables:
    """The tables of the checkout at `folder`; TaskError, one line naming the option and the
    folder, for one that is not such a checkout or whose modules fail."""
    where = f"--swe-gym {folder}"
    for module in (CONSTANTS, PARSERS):
        if not (folder / module).is_file():
            raise TaskError(
                f"{where}: no {module} (a checkout of SWE-Gym's fork of SWE-bench, "
                "github.com/SWE-Gym/SWE-Bench-Fork)"
            )
    try:
        tables = run_child(sys.executable, READER, str(folder), where=where, cwd=str(folder))
        specs, parsers = tables["specs"], tables["parsers"]
    except ChildFailed as error:
        raise TaskError(
            str(error).replace(": failed: ", ": its tables could not be read: ")
        ) from None
    except (KeyError, TypeError):
        raise TaskError(f"{where}: its tables are not of the fork's shape") from None
    return ForkTables(
        folder=folder,
        specs={repo.lower(): versions for repo, versions in specs.items()},
        parsers={repo.lower(): name for repo, name in parsers.items()},
    )
