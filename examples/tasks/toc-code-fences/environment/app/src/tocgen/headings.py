"""Finding a document's headings."""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int


def find_headings(text: str) -> list[Heading]:
    """Every ATX heading (`## Title`) of a Markdown document, in order."""
    headings = []
    for number, line in enumerate(text.splitlines(), 1):
        match = HEADING.match(line)
        if match:
            headings.append(Heading(len(match.group(1)), match.group(2), number))
    return headings
