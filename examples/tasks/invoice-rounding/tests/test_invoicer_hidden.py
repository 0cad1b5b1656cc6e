"""Hidden tests of invoice-rounding: half-up rounding to each currency's minor unit."""

import json
from decimal import Decimal

from invoicer import line_amount, load_invoice, parse_invoice, render, subtotal, tax, total


def invoice(currency, *lines, tax_rate=0):
    """An invoice as the export writes it: JSON numbers, not strings."""
    items = [
        {"description": f"item {n}", "quantity": quantity, "unit_price": price}
        for n, (quantity, price) in enumerate(lines, 1)
    ]
    text = json.dumps({"number": "T-1", "currency": currency, "tax_rate": tax_rate, "lines": []})
    # json.dumps would write 2.665 as 2.665 too; splice the literals in to be sure of the text.
    literal = ", ".join(
        f'{{"description": "{i["description"]}", "quantity": {i["quantity"]}, '
        f'"unit_price": {i["unit_price"]}}}'
        for i in items
    )
    return parse_invoice(text.replace('"lines": []', f'"lines": [{literal}]'))


def test_half_a_cent_rounds_up():
    inv = invoice("EUR", (1, "2.665"))
    assert line_amount(inv.lines[0], "EUR") == Decimal("2.67")


def test_prices_are_read_exactly():
    inv = invoice("EUR", (1, "2.675"))
    assert line_amount(inv.lines[0], "EUR") == Decimal("2.68")
    assert isinstance(inv.lines[0].unit_price, Decimal)


def test_amounts_are_decimals():
    inv = invoice("EUR", (3, "0.1"), (1, "0.2"), tax_rate="0.2")
    assert isinstance(total(inv), Decimal)
    assert str(subtotal(inv)) == "0.50"
    assert str(total(inv)) == "0.60"


def test_yen_rounds_to_whole_yen():
    inv = invoice("JPY", (3, "3333.5"), tax_rate="0.1")
    assert subtotal(inv) == Decimal("10001")
    assert tax(inv) == Decimal("1000")
    assert str(total(inv)) == "11001"
    assert render(inv).splitlines()[-1].endswith(" 11,001 JPY")


def test_dinar_keeps_three_decimals():
    inv = invoice("KWD", (1, "1.2345"), (2, "0.0105"))
    assert [line_amount(line, "KWD") for line in inv.lines] == [Decimal("1.235"), Decimal("0.021")]
    assert str(total(inv)) == "1.256"


def test_tax_is_charged_on_the_rounded_subtotal():
    inv = invoice("EUR", (1, "0.125"), (1, "0.125"), tax_rate="0.5")
    assert subtotal(inv) == Decimal("0.26")
    assert tax(inv) == Decimal("0.13")
    assert total(inv) == Decimal("0.39")


def test_lower_case_currency_codes_from_the_export(tmp_path):
    path = tmp_path / "INV-9.json"
    path.write_text(
        '{"number": "INV-9", "currency": "jpy", "tax_rate": 0.1,'
        ' "lines": [{"description": "Licence", "quantity": 3, "unit_price": 3333.5}]}'
    )
    inv = load_invoice(path)
    assert line_amount(inv.lines[0], inv.currency) == Decimal("10001")
    assert total(inv) == Decimal("11001")
    assert render(inv).splitlines()[-1].endswith(" 11,001 JPY")


def test_the_example_invoice():
    inv = load_invoice("/app/invoices/INV-0042.json")
    assert [str(line_amount(line, "EUR")) for line in inv.lines] == ["1146.00", "42.68", "16.25"]
    assert str(tax(inv)) == "240.99"
    assert str(total(inv)) == "1445.92"
