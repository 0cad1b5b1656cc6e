import pytest
from larder import RecipeError, format_recipe, parse_recipe

PANCAKES = """\
# Pancakes
serves: 4
1.5 cup flour
1/2 tsp salt
2 eggs
"""


def test_parse_reads_title_servings_and_items():
    recipe = parse_recipe(PANCAKES)
    assert recipe.title == "Pancakes"
    assert recipe.servings == 4
    assert [(i.quantity, i.unit, i.name) for i in recipe.items] == [
        (1.5, "cup", "flour"),
        (0.5, "tsp", "salt"),
        (2.0, None, "eggs"),
    ]


def test_format_round_trips():
    assert format_recipe(parse_recipe(PANCAKES)) == PANCAKES.replace("1/2", "0.5")


def test_missing_servings_is_an_error():
    with pytest.raises(RecipeError, match="serves"):
        parse_recipe("# Toast\n2 slices bread\n")


def test_bad_quantity_names_the_line():
    with pytest.raises(RecipeError, match="line 3"):
        parse_recipe("# Toast\nserves: 1\nsome bread\n")
