"""Constraints: comparisons joined by commas (">=1.2, <2"), and caret or tilde ranges."""

from __future__ import annotations

import operator
import re

from semverish.version import Version

COMPARISONS = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}
_CLAUSE = re.compile(r"(>=|<=|>|<|==|!=)\s*(\S+)")


class ConstraintError(ValueError):
    """A constraint that cannot be read."""


def _clauses(constraint: str) -> list[str]:
    clauses = []
    for clause in (part.strip() for part in constraint.split(",")):
        if clause.startswith(("^", "~")):
            # Ranges are verparse's business; imported here so plain comparisons need nothing.
            import verparse

            clauses.extend(verparse.expand(clause))
        elif clause:
            clauses.append(clause)
    return clauses


def satisfies(version: str, constraint: str) -> bool:
    """Whether `version` meets every clause of `constraint`."""
    wanted = Version.parse(version)
    for clause in _clauses(constraint):
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            raise ConstraintError(f"cannot read constraint {clause!r}")
        compare = COMPARISONS[match.group(1)]
        if not compare(wanted, Version.parse(match.group(2))):
            return False
    return True
