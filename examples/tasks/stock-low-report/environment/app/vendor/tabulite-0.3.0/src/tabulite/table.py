"""Columns as wide as their widest cell, two spaces apart, the header underlined."""

from __future__ import annotations

from collections.abc import Sequence

OPTIONS = ("title",)


def render(rows: Sequence[Sequence[object]], headers: Sequence[str], **options: object) -> str:
    """The table as text, without a trailing newline; `title=` puts a line above it."""
    for name in options:
        if name not in OPTIONS:
            raise TypeError(f"render() got an unknown option {name!r} (tabulite 0.3: {OPTIONS})")
    cells = [[str(value) for value in row] for row in rows]
    for number, row in enumerate(cells, 1):
        if len(row) != len(headers):
            raise ValueError(f"row {number} has {len(row)} cells, expected {len(headers)}")
    widths = [
        max([len(header), *(len(row[i]) for row in cells)]) for i, header in enumerate(headers)
    ]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            value.ljust(width) for value, width in zip(values, widths, strict=True)
        ).rstrip()

    title = options.get("title")
    lines = [str(title)] if title else []
    lines += [line(headers), line(["-" * width for width in widths])]
    lines += [line(row) for row in cells]
    return "\n".join(lines)
