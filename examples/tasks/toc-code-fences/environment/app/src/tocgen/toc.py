"""The table of contents, and writing it between a document's toc markers."""

from __future__ import annotations

import mdblocks

from tocgen.anchors import anchors
from tocgen.headings import find_headings

START, END = "<!-- toc -->", "<!-- /toc -->"


def table_of_contents(text: str, levels: tuple[int, int] = (2, 3)) -> str:
    """A nested Markdown list linking every heading of a level in `levels` (inclusive)."""
    headings = find_headings(text)
    low, high = levels
    lines = [
        f"{'  ' * (heading.level - low)}- [{heading.text}](#{name})"
        for heading, name in zip(headings, anchors(headings), strict=True)
        if low <= heading.level <= high
    ]
    return "\n".join(lines) + "\n" if lines else ""


def insert_toc(text: str, toc: str) -> str:
    """`text` with `toc` between its toc markers; markers inside code blocks do not count."""
    markers = {
        block.text: block.line
        for block in mdblocks.blocks(text)
        if block.kind == "html" and block.text in (START, END)
    }
    if START not in markers or END not in markers or markers[START] > markers[END]:
        raise ValueError(f"no {START} ... {END} markers outside code blocks")
    lines = text.splitlines(keepends=True)
    return "".join(lines[: markers[START]]) + toc + "".join(lines[markers[END] - 1 :])
