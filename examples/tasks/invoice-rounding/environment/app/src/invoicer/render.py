"""Printing an invoice: one line per item, then subtotal, tax and total."""

from __future__ import annotations

from decimal import Decimal

import minorunits

from invoicer.models import Invoice
from invoicer.totals import line_amount, subtotal, tax, total

WIDTH = 48


def money(amount: Decimal, currency: str) -> str:
    """`amount` with as many decimals as `currency` has, and its code: "1,234.50 EUR"."""
    digits = minorunits.exponent(currency)
    return f"{amount:,.{digits}f} {currency.upper()}"


def _row(label: str, amount: str) -> str:
    return f"{label:<{WIDTH - len(amount) - 1}} {amount}"


def render(invoice: Invoice) -> str:
    currency = invoice.currency
    rows = [f"Invoice {invoice.number}", "-" * WIDTH]
    for line in invoice.lines:
        label = f"{line.quantity} x {line.description}"
        rows.append(_row(label[:30], money(line_amount(line, currency), currency)))
    rows.append("-" * WIDTH)
    rows.append(_row("Subtotal", money(subtotal(invoice), currency)))
    rows.append(_row(f"Tax ({invoice.tax_rate * 100:g}%)", money(tax(invoice), currency)))
    rows.append(_row("Total", money(total(invoice), currency)))
    return "\n".join(rows) + "\n"
