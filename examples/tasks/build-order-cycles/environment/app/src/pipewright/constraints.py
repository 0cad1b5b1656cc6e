"""Checking each dependency's version against the constraint its dependents put on it."""

from __future__ import annotations

import semverish

from pipewright.workspace import Package


def unmet(packages: dict[str, Package]) -> list[str]:
    """One line per dependency whose version does not meet its dependent's constraint."""
    problems = []
    for package in packages.values():
        for name, constraint in package.depends.items():
            version = packages[name].version
            if not semverish.satisfies(version, constraint):
                problems.append(f"{package.name} needs {name} {constraint}, found {version}")
    return problems
