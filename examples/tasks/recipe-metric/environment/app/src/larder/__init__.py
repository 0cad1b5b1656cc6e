"""larder: scale recipes and convert them to metric."""

from larder.convert import to_metric
from larder.recipe import Ingredient, Recipe, RecipeError, format_recipe, load, parse_recipe
from larder.scale import scale

__all__ = [
    "Ingredient",
    "Recipe",
    "RecipeError",
    "format_recipe",
    "load",
    "parse_recipe",
    "scale",
    "to_metric",
]
