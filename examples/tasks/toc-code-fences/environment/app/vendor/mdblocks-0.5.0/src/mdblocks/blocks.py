"""The blocks of a document, in order: ATX headings, code fences, HTML lines, paragraphs.

A code fence opens with three or more backticks and closes with a line of at
least as many; its contents are never read as anything else. A fence that is
never closed runs to the end of the document. Tilde fences (~~~) are not
supported yet: rather than misread a document, `blocks` refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


@dataclass(frozen=True)
class Block:
    kind: str
    """"heading", "fence", "html" or "paragraph"."""
    text: str
    """A heading's title, a fence's contents, or the block's lines."""
    line: int
    """The 1-based line the block starts on."""
    level: int = 0
    """A heading's level, 1 to 6."""
    info: str = ""
    """A fence's info string: "python" for ```python."""


def _closes(line: str, marker: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(marker) and set(stripped) == {marker[0]}


def blocks(text: str) -> list[Block]:
    """Every top-level block of `text`, in order."""
    lines = text.splitlines()
    found: list[Block] = []
    paragraph: list[str] = []
    start = 0

    def end_paragraph() -> None:
        if paragraph:
            found.append(Block("paragraph", "\n".join(paragraph), start))
            paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        fence = FENCE.match(line)
        heading = HEADING.match(line)
        if fence:
            if fence.group(1).startswith("~"):
                raise NotImplementedError(
                    f"line {index + 1}: tilde code fences (~~~) are not supported by mdblocks 0.5"
                )
            end_paragraph()
            marker, body = fence.group(1), []
            index += 1
            while index < len(lines) and not _closes(lines[index], marker):
                body.append(lines[index])
                index += 1
            found.append(
                Block("fence", "\n".join(body), index - len(body), info=fence.group(2).strip())
            )
        elif heading:
            end_paragraph()
            title = (heading.group(2) or "").strip()
            found.append(Block("heading", title, index + 1, level=len(heading.group(1))))
        elif line.lstrip().startswith("<!--"):
            end_paragraph()
            found.append(Block("html", line.strip(), index + 1))
        elif not line.strip():
            end_paragraph()
        else:
            if not paragraph:
                start = index + 1
            paragraph.append(line)
        index += 1
    end_paragraph()
    return found
