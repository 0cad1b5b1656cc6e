"""The inventory: items in a JSON file, and the changes the team makes to them."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path


class StockError(ValueError):
    """A change the inventory refuses, or a file it cannot read."""


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    quantity: int
    reorder_level: int
    location: str


def load(path: str | Path) -> list[Item]:
    try:
        return [Item(**raw) for raw in json.loads(Path(path).read_text(encoding="utf-8"))]
    except (json.JSONDecodeError, TypeError) as error:
        raise StockError(f"{path}: not an inventory file ({error})") from None


def save(items: list[Item], path: str | Path) -> None:
    text = json.dumps([asdict(item) for item in items], indent=2)
    Path(path).write_text(text + "\n", encoding="utf-8")


def adjust(items: list[Item], sku: str, delta: int) -> list[Item]:
    """The inventory after adding `delta` (negative: removing) to item `sku`."""
    if not any(item.sku == sku for item in items):
        raise StockError(f"no item with SKU {sku!r}")
    changed = []
    for item in items:
        if item.sku == sku:
            if item.quantity + delta < 0:
                raise StockError(f"{sku}: only {item.quantity} in stock")
            item = replace(item, quantity=item.quantity + delta)
        changed.append(item)
    return changed
