"""--metric: quantities in grams and millilitres, the way European kitchens measure."""

from __future__ import annotations

from dataclasses import replace

import unitconv

from larder.recipe import Ingredient, Recipe

METRIC = {"mass": "g", "volume": "ml"}
"""The unit each dimension is expressed in."""


def to_metric_item(item: Ingredient) -> Ingredient:
    if item.unit in ("kg", "l"):  # the only units converted so far (issue #12)
        target = METRIC[unitconv.dimension(item.unit)]
        quantity = unitconv.convert(item.quantity, item.unit, target)
        return replace(item, quantity=quantity, unit=target)
    return item


def to_metric(recipe: Recipe) -> Recipe:
    return replace(recipe, items=tuple(map(to_metric_item, recipe.items)))
