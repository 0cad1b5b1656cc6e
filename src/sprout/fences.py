"""Reading fenced code blocks out of a model's Markdown reply."""

from __future__ import annotations

SHELL_TAGS = frozenset({"", "bash", "sh", "shell"})
"""Info strings of the blocks that are commands; any other language is shown, not run."""


def shell_blocks(text: str) -> list[str]:
    """The bodies of the fenced blocks tagged bash, sh, shell or nothing, in order.

    Fences are paired line by line, so the closing fence of a ```python block
    is never mistaken for the opening of a command; an unclosed block is ignored.
    """
    blocks: list[str] = []
    body: list[str] | None = None
    tag = ""
    for line in text.splitlines():
        fence = line.strip().startswith("```")
        if body is None and fence:
            body, tag = [], line.strip()[3:].strip().lower()
        elif body is not None and fence:
            if tag in SHELL_TAGS and any(part.strip() for part in body):
                blocks.append("\n".join(body))
            body = None
        elif body is not None:
            body.append(line)
    return blocks
