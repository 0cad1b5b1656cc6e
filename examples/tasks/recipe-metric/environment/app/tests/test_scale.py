from larder import parse_recipe, scale, to_metric

SOUP = """\
# Soup
serves: 2
1 kg potatoes
1 l stock
2 onions
"""


def test_doubling_doubles_every_quantity():
    doubled = scale(parse_recipe(SOUP), 4)
    assert doubled.servings == 4
    assert [item.quantity for item in doubled.items] == [2, 2, 4]


def test_metric_converts_kilograms_and_litres():
    metric = to_metric(parse_recipe(SOUP))
    assert [(item.quantity, item.unit) for item in metric.items] == [
        (1000, "g"),
        (1000, "ml"),
        (2, None),
    ]
