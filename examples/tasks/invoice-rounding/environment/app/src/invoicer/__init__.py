"""invoicer: totals and printable text for exported invoices."""

from invoicer.models import Invoice, InvoiceError, Line, load_invoice, parse_invoice
from invoicer.render import render
from invoicer.totals import line_amount, subtotal, tax, total

__all__ = [
    "Invoice",
    "InvoiceError",
    "Line",
    "line_amount",
    "load_invoice",
    "parse_invoice",
    "render",
    "subtotal",
    "tax",
    "total",
]
