import pytest
from stockroom import Item, StockError, adjust, load, save

ITEMS = [Item("A-1", "Bolt", 5, 10, "B2"), Item("A-2", "Nut", 50, 10, "B2")]


def test_adjust_changes_one_item():
    after = adjust(ITEMS, "A-1", 7)
    assert [item.quantity for item in after] == [12, 50]


def test_adjust_refuses_negative_stock():
    with pytest.raises(StockError, match="only 5 in stock"):
        adjust(ITEMS, "A-1", -6)


def test_unknown_sku_is_an_error():
    with pytest.raises(StockError, match="Z-9"):
        adjust(ITEMS, "Z-9", 1)


def test_save_and_load_round_trip(tmp_path):
    save(ITEMS, tmp_path / "inv.json")
    assert load(tmp_path / "inv.json") == ITEMS
