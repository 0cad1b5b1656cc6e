"""Reading fenced code blocks out of a model's Markdown reply."""

from __future__ import annotations

SHELL_TAGS = frozenset({"", "bash", "sh", "shell"})
"""Info strings of the blocks that are commands; any other language is shown, not run."""


def shell_blocks(text: str) -> list[str]:
    """The bodies of the fenced blocks tagged bash, sh, shell or nothing, in order.

    Fences are paired line by line, so the closing fence of a ```python block
    is never mistaken for the opening of a command; an unclosed block is ignored.
    """
    return [body for tag, body in fenced_blocks(text) if tag in SHELL_TAGS and body.strip()]


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(info string, lower-cased; body) of every closed fenced block, in order.

    The one pairing rule for every reader of fences (shell calls, the roles' JSON).
    """
    blocks: list[tuple[str, str]] = []
    body: list[str] | None = None
    tag = ""
    for line in text.splitlines():
        fence = line.strip().startswith("```")
        if body is None and fence:
            body, tag = [], line.strip()[3:].strip().lower()
        elif body is not None and fence:
            blocks.append((tag, "\n".join(body)))
            body = None
        elif body is not None:
            body.append(line)
    return blocks
