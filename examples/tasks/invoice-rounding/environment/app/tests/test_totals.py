from invoicer import parse_invoice, render, subtotal, tax, total

INVOICE = """{"number": "INV-7", "currency": "EUR", "tax_rate": 0.2, "lines": [
 {"description": "Chairs", "quantity": 4, "unit_price": 35},
 {"description": "Table", "quantity": 1, "unit_price": 120.5}]}"""


def test_totals_of_a_simple_invoice():
    invoice = parse_invoice(INVOICE)
    assert f"{subtotal(invoice):.2f}" == "260.50"
    assert f"{tax(invoice):.2f}" == "52.10"
    assert f"{total(invoice):.2f}" == "312.60"


def test_render_shows_each_line_and_the_total():
    text = render(parse_invoice(INVOICE))
    assert text.splitlines()[0] == "Invoice INV-7"
    assert "4 x Chairs" in text and "140.00 EUR" in text
    assert text.splitlines()[-1].endswith("312.60 EUR")
