"""minorunits: how many decimal places (minor units) each ISO 4217 currency has."""

from __future__ import annotations

from decimal import Decimal

__version__ = "1.4.0"

EXPONENTS = {
    "BHD": 3,
    "CHF": 2,
    "EUR": 2,
    "GBP": 2,
    "ISK": 0,
    "JPY": 0,
    "KRW": 0,
    "KWD": 3,
    "OMR": 3,
    "SEK": 2,
    "USD": 2,
}


class UnknownCurrency(LookupError):
    """A code that is not in the table."""


def exponent(code: str) -> int:
    """The number of decimal places of currency `code` ("eur" and "EUR" alike)."""
    try:
        return EXPONENTS[code.strip().upper()]
    except KeyError:
        raise UnknownCurrency(f"unknown currency {code!r}") from None


def quantum(code: str) -> Decimal:
    """The smallest amount of currency `code`: Decimal("0.01") for EUR, Decimal("1") for JPY."""
    return Decimal(1).scaleb(-exponent(code))
