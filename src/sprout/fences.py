"""Reading fenced code blocks out of a model's Markdown reply."""

from __future__ import annotations

from dataclasses import dataclass

SHELL_TAGS = frozenset({"", "bash", "sh", "shell"})
"""Info strings of the blocks that are commands; any other language is shown, not run."""


@dataclass(frozen=True)
class _Segment:
    """Prose lines, or one closed fenced block (its fences included in `lines`)."""

    lines: list[str]
    tag: str | None = None
    """The block's info string, lower-cased; None for prose."""

    @property
    def body(self) -> str:
        return "\n".join(self.lines[1:-1])


def _segments(text: str) -> list[_Segment]:
    """The one pairing rule for every reader of fences: line by line, so the closing fence
    of a ```python block is never taken for an opening; an unclosed fence stays prose."""
    segments: list[_Segment] = []
    prose: list[str] = []
    block: list[str] | None = None
    for line in text.splitlines():
        fence = line.strip().startswith("```")
        if block is None and fence:
            block = [line]
        elif block is not None and fence:
            segments += [
                _Segment(prose),
                _Segment([*block, line], block[0].strip()[3:].strip().lower()),
            ]
            prose, block = [], None
        elif block is not None:
            block.append(line)
        else:
            prose.append(line)
    return [*segments, _Segment(prose + (block or []))]


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(info string, lower-cased; body) of every closed fenced block, in order."""
    return [(s.tag, s.body) for s in _segments(text) if s.tag is not None]


def shell_blocks(text: str) -> list[str]:
    """The bodies of the fenced blocks tagged bash, sh, shell or nothing, in order."""
    return [body for tag, body in fenced_blocks(text) if tag in SHELL_TAGS and body.strip()]


def without_shell_blocks(text: str) -> str:
    """`text` with its closed shell blocks left out: the prose around the commands.

    For readers that list each command with its output anyway, so the reply's
    copy of it would only be read (and paid for) twice.
    """
    kept = [s.lines for s in _segments(text) if s.tag not in SHELL_TAGS]
    return "\n".join(line for lines in kept for line in lines).strip()
