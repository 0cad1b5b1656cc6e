"""The unit table and the two operations on it."""

from __future__ import annotations

VERSION = "1.2.0"

# unit -> (dimension, size in the dimension's base unit: grams or millilitres)
UNITS: dict[str, tuple[str, float]] = {
    "g": ("mass", 1.0),
    "kg": ("mass", 1000.0),
    "ml": ("volume", 1.0),
    "l": ("volume", 1000.0),
    "tsp": ("volume", 4.92892159375),
    "tbsp": ("volume", 14.78676478125),
    "cup": ("volume", 236.5882365),
}
ALIASES = {"cups": "cup", "litre": "l", "liter": "l", "gram": "g", "grams": "g"}


class UnknownUnit(ValueError):
    """A unit that is not in the table."""


class DimensionError(ValueError):
    """A conversion between a mass and a volume."""


def _entry(unit: str) -> tuple[str, float]:
    key = unit.lower()
    key = ALIASES.get(key, key)
    if key not in UNITS:
        raise UnknownUnit(f"unknown unit {unit!r}")
    return UNITS[key]


def dimension(unit: str) -> str:
    """ "mass" or "volume"."""
    return _entry(unit)[0]


def convert(quantity: float, unit: str, to: str) -> float:
    """`quantity` `unit` expressed in unit `to`."""
    kind, size = _entry(unit)
    target_kind, target_size = _entry(to)
    if kind != target_kind:
        raise DimensionError(f"cannot convert {unit} ({kind}) to {to} ({target_kind})")
    return quantity * size / target_size
