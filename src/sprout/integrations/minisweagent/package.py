"""What sprout reads of the installed mini-swe-agent package, without importing it.

Importing `minisweagent` prints a banner, loads a `.env` and makes a config folder, and
its model classes import litellm, which fetches a price list from the network. The
facts sprout needs (its shipped configs, the keys its config classes accept, their
defaults, its `bash` tool) are plain literals in its source, so they are read with
`ast` from the files pip installed: the installed version's, never a copy of ours.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

from sprout.errors import SproutError

SECTION_FOLDERS = {
    "agent": ("agents",),
    "environment": ("environments", "environments/extra"),
    "model": ("models",),
}
"""Where each config section's classes live in the package."""
CLASS_KEYS = {"agent": "agent_class", "environment": "environment_class", "model": "model_class"}
RUN_KEYS = frozenset({"task", "env_startup_command"})
"""The `run` section's keys, read by mini-swe-agent's `mini` and `mini-extra swebench`."""


class MiniSweAgentMissing(SproutError):
    """mini-swe-agent is not installed where sprout runs."""


@cache
def package_dir() -> Path:
    """The installed `minisweagent` package's folder."""
    spec = importlib.util.find_spec("minisweagent")
    if spec is None or not spec.submodule_search_locations:
        raise MiniSweAgentMissing(
            "mini-swe-agent: not installed (pip install 'sprout-rl[integrations]')",
            input_name="--agent-config",
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _module(relative: str) -> ast.Module:
    return ast.parse((package_dir() / relative).read_text(encoding="utf-8"))


def version() -> str:
    """The installed mini-swe-agent's `__version__`."""
    return str(module_literal("__init__.py", "__version__"))


def bash_tool() -> dict[str, Any]:
    """The `bash` tool mini-swe-agent's tool-call models offer."""
    return dict(module_literal("models/utils/actions_toolcall.py", "BASH_TOOL"))


def module_literal(relative: str, name: str) -> Any:
    """The literal assigned to `name` at the top of the package's file `relative`."""
    for node in _module(relative).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise MiniSweAgentMissing(f"mini-swe-agent {relative}: no {name} (an unknown version?)")


@cache
def config_fields(relative: str, class_name: str) -> dict[str, Any]:
    """The fields of config class `class_name` in `relative` and its bases in the same file,
    each with its literal default (`...` where it has none or one that is not a literal)."""
    classes = {n.name: n for n in _module(relative).body if isinstance(n, ast.ClassDef)}
    fields: dict[str, Any] = {}
    node = classes.get(class_name)
    if node is None:
        raise MiniSweAgentMissing(f"mini-swe-agent {relative}: no class {class_name}")
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            fields |= config_fields(relative, base.id)
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            fields[statement.target.id] = _default(statement.value)
    return fields


def _default(value: ast.expr | None) -> Any:
    try:
        return ast.literal_eval(value) if value is not None else ...
    except ValueError:  # a call such as os.getenv(...): no literal default
        return ...


@cache
def section_keys(section: str) -> frozenset[str]:
    """Every key a config class of `section` accepts, in any of the package's classes."""
    if section == "run":
        return RUN_KEYS
    keys = {CLASS_KEYS[section]}
    for folder in SECTION_FOLDERS[section]:
        for path in sorted((package_dir() / folder).glob("*.py")):
            relative = str(path.relative_to(package_dir()))
            for node in _module(relative).body:
                if isinstance(node, ast.ClassDef) and node.name.endswith("Config"):
                    keys |= set(config_fields(relative, node.name))
    return frozenset(keys)


def shipped_config(name: str) -> Path | None:
    """The config mini-swe-agent ships as `name` (`swebench`, `mini`, `default`): where its
    own `get_config_path` looks in the package (config/, config/extra/, config/benchmarks/)."""
    folder = package_dir() / "config"
    for candidate in (folder, folder / "extra", folder / "benchmarks"):
        path = candidate / f"{name}.yaml"
        if path.is_file():
            return path
    return None


def shipped_config_names() -> list[str]:
    """Every config the package ships, by the name `mini:NAME` takes."""
    return sorted(p.stem for p in (package_dir() / "config").rglob("*.yaml"))
