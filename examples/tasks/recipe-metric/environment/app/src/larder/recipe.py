"""Recipe files: a title, how many it serves, and one ingredient per line."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

UNITS = frozenset({"g", "kg", "ml", "l", "tsp", "tbsp", "cup", "cups", "oz", "lb", "floz", "pint"})
"""Words read as units; anything else after the quantity is part of the name."""


class RecipeError(ValueError):
    """A recipe file that cannot be read; the message names the line."""


@dataclass(frozen=True)
class Ingredient:
    quantity: float
    unit: str | None
    name: str


@dataclass(frozen=True)
class Recipe:
    title: str
    servings: int
    items: tuple[Ingredient, ...]


def parse_quantity(text: str) -> float:
    """`2`, `1.5` or `1/2` as a number."""
    try:
        return float(Fraction(text))
    except (ValueError, ZeroDivisionError):
        raise RecipeError(f"not a quantity: {text!r}") from None


def parse_ingredient(line: str) -> Ingredient:
    words = line.split()
    if len(words) < 2:
        raise RecipeError(f"expected 'QUANTITY [UNIT] NAME', got {line!r}")
    quantity = parse_quantity(words[0])
    if words[1].lower() in UNITS and len(words) > 2:
        return Ingredient(quantity, words[1].lower(), " ".join(words[2:]))
    return Ingredient(quantity, None, " ".join(words[1:]))


def parse_recipe(text: str) -> Recipe:
    title, servings, items = "", 0, []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        try:
            if line.startswith("#"):
                title = line.lstrip("#").strip()
            elif line.lower().startswith("serves:"):
                servings = int(line.split(":", 1)[1])
            else:
                items.append(parse_ingredient(line))
        except (RecipeError, ValueError) as error:
            raise RecipeError(f"line {number}: {error}") from None
    if servings < 1:
        raise RecipeError("missing 'serves: N' line")
    return Recipe(title, servings, tuple(items))


def load(path: str | Path) -> Recipe:
    return parse_recipe(Path(path).read_text(encoding="utf-8"))


def format_quantity(quantity: float) -> str:
    return f"{quantity:g}"


def format_recipe(recipe: Recipe) -> str:
    lines = [f"# {recipe.title}", f"serves: {recipe.servings}"]
    for item in recipe.items:
        unit = f" {item.unit}" if item.unit else ""
        lines.append(f"{format_quantity(item.quantity)}{unit} {item.name}")
    return "\n".join(lines) + "\n"
