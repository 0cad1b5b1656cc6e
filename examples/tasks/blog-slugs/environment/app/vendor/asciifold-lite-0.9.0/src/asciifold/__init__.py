"""asciifold (lite): spell Latin-1 text in ASCII, and refuse anything else.

The lite edition covers exactly ISO 8859-1, the encoding of the legacy export
it was written for; a character outside it is an error rather than a guess.
"""

from __future__ import annotations

import unicodedata

__version__ = "0.9.0"

SPELLED = {"ß": "ss", "æ": "ae", "Æ": "AE", "ø": "o", "Ø": "O", "þ": "th", "Þ": "TH"}


class FoldError(ValueError):
    """A character outside Latin-1."""


def fold_char(char: str) -> str:
    if char.isascii():
        return char
    if ord(char) > 0xFF:
        raise FoldError(f"no Latin-1 spelling for {char!r} (U+{ord(char):04X})")
    if char in SPELLED:
        return SPELLED[char]
    decomposed = unicodedata.normalize("NFKD", char)
    return "".join(part for part in decomposed if part.isascii())


def fold(text: str) -> str:
    """`text` spelled in ASCII; FoldError for a character outside Latin-1."""
    return "".join(fold_char(char) for char in text)
