"""Hidden tests of recipe-metric: fractions survive scaling; --metric converts every unit."""

import pytest
from larder import parse_recipe, scale, to_metric
from larder.cli import main

PANCAKES = """\
# Pancakes
serves: 4
1.5 cup flour
2 tbsp sugar
1 tsp baking powder
300 ml milk
3 eggs
25 g butter
"""

SHORTBREAD = """\
# Shortbread
serves: 12
8 oz butter
4 oz sugar
1 lb flour
"""


def quantities(recipe):
    return [(item.quantity, item.unit) for item in recipe.items]


def test_scaling_keeps_fractions():
    scaled = scale(parse_recipe(PANCAKES), 6)
    assert quantities(scaled)[:2] == [(2.25, "cup"), (3, "tbsp")]
    assert scaled.items[4].quantity == 4.5


def test_scaling_rounds_to_two_places():
    risotto = parse_recipe("# Risotto\nserves: 3\n1 cup rice\n2 tbsp oil\n750 ml stock\n")
    assert quantities(scale(risotto, 2)) == [(0.67, "cup"), (1.33, "tbsp"), (500, "ml")]


def test_metric_converts_cups_and_spoons():
    metric = to_metric(parse_recipe(PANCAKES))
    assert quantities(metric) == [
        (355, "ml"),
        (30, "ml"),
        (5, "ml"),
        (300, "ml"),
        (3, None),
        (25, "g"),
    ]


def test_metric_quantities_are_whole():
    metric = to_metric(scale(parse_recipe(PANCAKES), 6))
    assert all(isinstance(item.quantity, int) for item in metric.items if item.unit)


def test_metric_converts_ounces_and_pounds():
    metric = to_metric(parse_recipe(SHORTBREAD))
    assert quantities(metric) == [(227, "g"), (113, "g"), (454, "g")]


def test_cli_scales_to_metric(tmp_path, capsys):
    path = tmp_path / "shortbread.txt"
    path.write_text(SHORTBREAD)
    assert main(["scale", str(path), "--servings", "6", "--metric"]) == 0
    assert capsys.readouterr().out == (
        "# Shortbread\nserves: 6\n113 g butter\n57 g sugar\n227 g flour\n"
    )


@pytest.mark.parametrize("servings", [1, 4, 8])
def test_metric_never_changes_grams_or_unitless(servings):
    metric = to_metric(scale(parse_recipe(PANCAKES), servings))
    assert metric.items[5].unit == "g" and metric.items[4].unit is None
