"""asciifold: spell Unicode text in ASCII.

Letters with accents lose them (é → e), letters that are not an accented
ASCII letter are spelled out (ß → ss, ł → l, œ → oe), and anything else that
has no ASCII spelling is dropped.
"""

from __future__ import annotations

import unicodedata

__version__ = "1.3.0"

SPELLED = {
    "ß": "ss",
    "ẞ": "SS",
    "æ": "ae",
    "Æ": "AE",
    "œ": "oe",
    "Œ": "OE",
    "ø": "o",
    "Ø": "O",
    "ł": "l",
    "Ł": "L",
    "đ": "d",
    "Đ": "D",
    "ð": "d",
    "Ð": "D",
    "þ": "th",
    "Þ": "TH",
    "\u0131": "i",
    "\u2013": "-",
    "\u2014": "-",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
}


def fold_char(char: str) -> str:
    """One character in ASCII: itself, its spelling, its letter without accents, or ""."""
    if char.isascii():
        return char
    if char in SPELLED:
        return SPELLED[char]
    decomposed = unicodedata.normalize("NFKD", char)
    return "".join(part for part in decomposed if part.isascii())


def fold(text: str) -> str:
    """`text` spelled in ASCII."""
    return "".join(fold_char(char) for char in text)
