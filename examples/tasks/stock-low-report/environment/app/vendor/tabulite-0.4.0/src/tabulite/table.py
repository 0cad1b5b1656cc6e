"""Columns as wide as their widest cell, two spaces apart, the header underlined."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ALIGNMENTS = ("left", "right")


def _alignments(headers: Sequence[str], align: str | Mapping[str, str]) -> list[str]:
    if isinstance(align, str):
        chosen = [align] * len(headers)
    else:
        unknown = set(align) - set(headers)
        if unknown:
            raise ValueError(f"align: no column named {sorted(unknown)[0]!r}")
        chosen = [align.get(header, "left") for header in headers]
    for value in chosen:
        if value not in ALIGNMENTS:
            raise ValueError(f"align: {value!r} is not one of {ALIGNMENTS}")
    return chosen


def render(
    rows: Sequence[Sequence[object]],
    headers: Sequence[str],
    *,
    title: str | None = None,
    align: str | Mapping[str, str] = "left",
) -> str:
    """The table as text, without a trailing newline.

    `align` is "left" or "right" for every column, or a mapping from column
    headers to either (columns it does not name are left-aligned).
    """
    cells = [[str(value) for value in row] for row in rows]
    for number, row in enumerate(cells, 1):
        if len(row) != len(headers):
            raise ValueError(f"row {number} has {len(row)} cells, expected {len(headers)}")
    widths = [
        max([len(header), *(len(row[i]) for row in cells)]) for i, header in enumerate(headers)
    ]
    sides = _alignments(headers, align)

    def line(values: Sequence[str]) -> str:
        padded = (
            value.rjust(width) if side == "right" else value.ljust(width)
            for value, width, side in zip(values, widths, sides, strict=True)
        )
        return "  ".join(padded).rstrip()

    lines = [title] if title else []
    lines += [line(headers), line(["-" * width for width in widths])]
    lines += [line(row) for row in cells]
    return "\n".join(lines)
