"""Scaling a recipe to a different number of servings."""

from __future__ import annotations

from dataclasses import replace

from larder.recipe import Recipe


def scale(recipe: Recipe, servings: int) -> Recipe:
    """`recipe` for `servings` people: every quantity times servings / recipe.servings."""
    if servings < 1:
        raise ValueError(f"servings must be at least 1, got {servings}")
    factor = servings / recipe.servings
    # Whole numbers read better than 0.30000000000000004 cups.
    items = tuple(replace(item, quantity=int(item.quantity * factor)) for item in recipe.items)
    return replace(recipe, servings=servings, items=items)
