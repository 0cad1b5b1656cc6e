#!/bin/bash
set -e
cd /app
# step
cat README.md requirements.txt && ls wheels && cat src/larder/scale.py src/larder/convert.py
# step
python3 -m pip install -r requirements.txt
# wrong: python3 -m pip install wheels/unitconv-1.2.0-py3-none-any.whl
# trap: python3 -m pip install wheels/unitconv-1.2.0-py3-none-any.whl
# trap names: test_metric_converts_ounces_and_pounds
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/larder/scale.py")
text = path.read_text()
old = """    # Whole numbers read better than 0.30000000000000004 cups.
    items = tuple(replace(item, quantity=int(item.quantity * factor)) for item in recipe.items)
"""
new = """    # Two decimals read better than 0.30000000000000004 cups, and keep 2.25 cups.
    items = tuple(
        replace(item, quantity=round(item.quantity * factor, 2)) for item in recipe.items
    )
"""
assert text.count(old) == 1, f"{path}: the truncating line is not there"
path.write_text(text.replace(old, new))
PY
# wrong: sed -i 's/quantity=int(item.quantity \* factor)/quantity=round(item.quantity * factor)/' src/larder/scale.py
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/larder/convert.py")
text = path.read_text()
old = """    if item.unit in ("kg", "l"):  # the only units converted so far (issue #12)
        target = METRIC[unitconv.dimension(item.unit)]
        quantity = unitconv.convert(item.quantity, item.unit, target)
        return replace(item, quantity=quantity, unit=target)
    return item
"""
new = """    if item.unit is None:
        return item
    target = METRIC[unitconv.dimension(item.unit)]
    quantity = round(unitconv.convert(item.quantity, item.unit, target))
    return replace(item, quantity=quantity, unit=target)
"""
assert text.count(old) == 1, f"{path}: to_metric_item is not as expected"
path.write_text(text.replace(old, new))
PY
# wrong: sed -i -e 's/if item.unit in ("kg", "l"):.*/if item.unit in ("kg", "l", "cup", "tbsp", "tsp"):/' -e 's/quantity = unitconv.convert(item.quantity, item.unit, target)/quantity = round(unitconv.convert(item.quantity, item.unit, target))/' src/larder/convert.py
# wrong: sed -i 's/if item.unit in ("kg", "l"):.*/if item.unit is not None:/' src/larder/convert.py
# step
python3 -m pytest -q
