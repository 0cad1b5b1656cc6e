"""The reports the team prints, drawn with tabulite."""

from __future__ import annotations

import tabulite

from stockroom.inventory import Item


def stock_table(items: list[Item]) -> str:
    """Every item: SKU, name, quantity and location."""
    rows = [(item.sku, item.name, item.quantity, item.location) for item in items]
    return tabulite.render(rows, ["SKU", "Name", "Qty", "Location"])
