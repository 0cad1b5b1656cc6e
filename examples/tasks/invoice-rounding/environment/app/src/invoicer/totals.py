"""Invoice arithmetic: each amount rounded to the currency's minor unit as it is computed."""

from __future__ import annotations

from decimal import Decimal

from invoicer.models import Invoice, Line


def round_amount(amount: Decimal, currency: str) -> Decimal:
    """`amount` rounded to the smallest unit of `currency`."""
    return round(amount, 2)


def line_amount(line: Line, currency: str) -> Decimal:
    return round_amount(line.quantity * line.unit_price, currency)


def subtotal(invoice: Invoice) -> Decimal:
    return sum(line_amount(line, invoice.currency) for line in invoice.lines)


def tax(invoice: Invoice) -> Decimal:
    """Tax on the rounded subtotal, itself rounded."""
    return round_amount(subtotal(invoice) * invoice.tax_rate, invoice.currency)


def total(invoice: Invoice) -> Decimal:
    return subtotal(invoice) + tax(invoice)
