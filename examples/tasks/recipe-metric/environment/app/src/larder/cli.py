"""The `larder` command: `show` a recipe, or `scale` it (optionally to metric)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from larder.convert import to_metric
from larder.recipe import RecipeError, format_recipe, load
from larder.scale import scale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="larder")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print a recipe")
    show.add_argument("file")
    scaled = commands.add_parser("scale", help="print a recipe for a number of servings")
    scaled.add_argument("file")
    scaled.add_argument("--servings", type=int, required=True)
    scaled.add_argument("--metric", action="store_true", help="grams and millilitres")
    args = parser.parse_args(argv)
    try:
        recipe = load(args.file)
    except (OSError, RecipeError) as error:
        print(f"larder: {args.file}: {error}", file=sys.stderr)
        return 2
    if args.command == "scale":
        recipe = scale(recipe, args.servings)
        if args.metric:
            recipe = to_metric(recipe)
    print(format_recipe(recipe), end="")
    return 0
