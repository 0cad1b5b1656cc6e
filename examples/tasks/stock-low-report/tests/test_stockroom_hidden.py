"""Hidden tests of stock-low-report: low_stock, low_stock_table and `stockroom FILE low`."""

import shutil

from stockroom import Item
from stockroom.cli import main
from stockroom.inventory import low_stock
from stockroom.report import low_stock_table

ITEMS = [
    Item("A-1", "Bolt", 0, 5, "B2"),
    Item("A-2", "Nut", 2, 10, "B2"),
    Item("A-3", "Washer", 3, 3, "B3"),
    Item("A-4", "Screw", 9, 5, "B3"),
    Item("A-0", "Rivet", 0, 5, "B1"),
]

LOW_TABLE = """\
SKU    Name              Qty  Reorder  Short
-----  ----------------  ---  -------  -----
A-100  Hex bolt M6        40       50     10
C-007  Wood glue 500 ml    0        6      6
B-220  Hinge, brass       12       12      0"""


def test_low_stock_includes_items_at_their_reorder_level():
    assert "A-3" in [item.sku for item in low_stock(ITEMS)]


def test_low_stock_most_urgent_first_then_by_sku():
    assert [item.sku for item in low_stock(ITEMS)] == ["A-2", "A-0", "A-1", "A-3"]


def test_nothing_low():
    assert low_stock([Item("A-4", "Screw", 9, 5, "B3")]) == []


def test_low_stock_table_right_aligns_numbers():
    table = low_stock_table([Item("A-2", "Nut", 2, 10, "B2"), Item("A-3", "Washer", 3, 3, "B3")])
    assert table.splitlines() == [
        "SKU  Name    Qty  Reorder  Short",
        "---  ------  ---  -------  -----",
        "A-2  Nut       2       10      8",
        "A-3  Washer    3        3      0",
    ]


def test_cli_low(tmp_path, capsys):
    path = shutil.copy("/app/data/inventory.json", tmp_path / "inventory.json")
    assert main([str(path), "low"]) == 0
    assert capsys.readouterr().out == LOW_TABLE + "\n"


def test_cli_low_with_nothing_to_reorder(tmp_path, capsys):
    path = shutil.copy("/app/data/inventory.json", tmp_path / "inventory.json")
    for sku, delta in (("A-100", 60), ("B-220", 1), ("C-007", 10)):
        assert main([str(path), "adjust", sku, str(delta)]) == 0
    capsys.readouterr()
    assert main([str(path), "low"]) == 0
    assert capsys.readouterr().out == "nothing to reorder\n"
