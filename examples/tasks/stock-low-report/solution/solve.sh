#!/bin/bash
set -e
cd /app
# step
cat README.md requirements.txt && ls wheels vendor && cat src/stockroom/report.py src/stockroom/cli.py && cat vendor/tabulite-0.4.0/CHANGES.md
# step
python3 -m pip install -r requirements.txt
# wrong: python3 -m pip install --no-build-isolation ./vendor/tabulite-0.3.0
# trap: python3 -m pip install --no-build-isolation ./vendor/tabulite-0.3.0
# trap names: test_low_stock_table_right_aligns_numbers
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/stockroom/inventory.py")
text = path.read_text()
assert "def low_stock" not in text, f"{path}: low_stock is already there"
path.write_text(text + '''

def low_stock(items: list[Item]) -> list[Item]:
    """Items at or below their reorder level, the largest shortfall first, then by SKU."""
    low = [item for item in items if item.quantity <= item.reorder_level]
    return sorted(low, key=lambda item: (item.quantity - item.reorder_level, item.sku))
''')
PY
# wrong: printf '\n\ndef low_stock(items):\n    """Items below their reorder level, the largest shortfall first."""\n    low = [item for item in items if item.quantity < item.reorder_level]\n    return sorted(low, key=lambda item: (item.quantity - item.reorder_level, item.sku))\n' >> src/stockroom/inventory.py
# wrong: printf '\n\ndef low_stock(items):\n    """Items at or below their reorder level, the fewest in stock first."""\n    low = [item for item in items if item.quantity <= item.reorder_level]\n    return sorted(low, key=lambda item: (item.quantity, item.sku))\n' >> src/stockroom/inventory.py
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/stockroom/report.py")
text = path.read_text()
assert "def low_stock_table" not in text, f"{path}: low_stock_table is already there"
path.write_text(text + '''

def low_stock_table(items: list[Item]) -> str:
    """The reorder list: quantity, reorder level and shortfall, numbers right-aligned."""
    rows = [
        (item.sku, item.name, item.quantity, item.reorder_level, item.reorder_level - item.quantity)
        for item in items
    ]
    numbers = {"Qty": "right", "Reorder": "right", "Short": "right"}
    return tabulite.render(rows, ["SKU", "Name", "Qty", "Reorder", "Short"], align=numbers)
''')
PY
# wrong: printf '\n\ndef low_stock_table(items):\n    rows = [(i.sku, i.name, i.quantity, i.reorder_level, i.reorder_level - i.quantity) for i in items]\n    return tabulite.render(rows, ["SKU", "Name", "Qty", "Reorder", "Short"])\n' >> src/stockroom/report.py
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/stockroom/cli.py")
text = path.read_text()
edits = [
    (
        "from stockroom.inventory import StockError, adjust, load, save\n",
        "from stockroom.inventory import StockError, adjust, load, low_stock, save\n",
    ),
    (
        "from stockroom.report import stock_table\n",
        "from stockroom.report import low_stock_table, stock_table\n",
    ),
    (
        '    change.add_argument("delta", type=int)\n',
        '    change.add_argument("delta", type=int)\n'
        '    commands.add_parser("low", help="what to reorder, most urgent first")\n',
    ),
    (
        "    print(stock_table(items))\n",
        '    if args.command == "low":\n'
        "        low = low_stock(items)\n"
        '        print(low_stock_table(low) if low else "nothing to reorder")\n'
        "        return 0\n"
        "    print(stock_table(items))\n",
    ),
]
for old, new in edits:
    assert text.count(old) == 1, f"{path}: expected one {old!r}"
    text = text.replace(old, new)
path.write_text(text)
PY
# wrong: sed -i -e 's/^from stockroom.inventory import StockError, adjust, load, save$/from stockroom.inventory import StockError, adjust, load, low_stock, save/' -e 's/^    change.add_argument("delta", type=int)$/&\n    commands.add_parser("low", help="what to reorder")/' -e 's/^    print(stock_table(items))$/    print(stock_table(low_stock(items) if args.command == "low" else items))/' src/stockroom/cli.py
# step
python3 -m pytest -q
