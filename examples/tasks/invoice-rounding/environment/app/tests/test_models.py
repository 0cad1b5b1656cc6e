import pytest
from invoicer import InvoiceError, parse_invoice

INVOICE = """{"number": "INV-1", "currency": "EUR", "tax_rate": 0.25,
 "lines": [{"description": "Widget", "quantity": 4, "unit_price": 2.5}]}"""


def test_parse_reads_every_field():
    invoice = parse_invoice(INVOICE)
    assert invoice.number == "INV-1"
    assert invoice.currency == "EUR"
    assert invoice.tax_rate == 0.25
    assert len(invoice.lines) == 1
    assert invoice.lines[0].description == "Widget"
    assert invoice.lines[0].quantity == 4
    assert invoice.lines[0].unit_price == 2.5


def test_missing_field_is_named():
    with pytest.raises(InvoiceError, match="currency"):
        parse_invoice('{"number": "INV-2", "lines": []}')


def test_bad_line_is_named():
    with pytest.raises(InvoiceError, match=r"lines\[0\]"):
        parse_invoice('{"number": "INV-3", "currency": "EUR", "lines": [{"quantity": 1}]}')
