"""workspace.toml: a `[packages.NAME]` table per package, with `version` and `depends`."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path


class WorkspaceError(ValueError):
    """A workspace file that cannot be read; the message names the package and field."""


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    depends: dict[str, str] = field(default_factory=dict)
    """Dependency name -> version constraint."""


def parse(text: str) -> dict[str, Package]:
    """The packages of a workspace, in the order the file lists them."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise WorkspaceError(f"not TOML: {error}") from None
    packages = {}
    for name, table in data.get("packages", {}).items():
        if "version" not in table:
            raise WorkspaceError(f"packages.{name}: missing 'version'")
        depends = table.get("depends", {})
        unknown = [dep for dep in depends if dep not in data["packages"]]
        if unknown:
            raise WorkspaceError(f"packages.{name}.depends: no package named {unknown[0]!r}")
        packages[name] = Package(name, str(table["version"]), dict(depends))
    return packages


def load(path: str | Path) -> dict[str, Package]:
    return parse(Path(path).read_text(encoding="utf-8"))
