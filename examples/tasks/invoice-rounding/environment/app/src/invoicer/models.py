"""Invoice files, as the billing export writes them (JSON), read into dataclasses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path


class InvoiceError(ValueError):
    """An invoice file that cannot be read; the message names the field."""


@dataclass(frozen=True)
class Line:
    description: str
    quantity: int
    unit_price: Decimal


@dataclass(frozen=True)
class Invoice:
    number: str
    currency: str
    tax_rate: Decimal
    lines: tuple[Line, ...]


def _line(raw: dict, index: int) -> Line:
    try:
        return Line(
            description=str(raw["description"]),
            quantity=int(raw["quantity"]),
            unit_price=float(raw["unit_price"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise InvoiceError(f"lines[{index}]: {error!r}") from None


def parse_invoice(text: str) -> Invoice:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvoiceError(f"not JSON: {error}") from None
    for field in ("number", "currency", "lines"):
        if field not in data:
            raise InvoiceError(f"missing field {field!r}")
    return Invoice(
        number=str(data["number"]),
        currency=str(data["currency"]),
        tax_rate=float(data.get("tax_rate", 0)),
        lines=tuple(_line(raw, i) for i, raw in enumerate(data["lines"])),
    )


def load_invoice(path: str | Path) -> Invoice:
    return parse_invoice(Path(path).read_text(encoding="utf-8"))
