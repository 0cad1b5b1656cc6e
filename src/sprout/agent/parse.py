"""Reading shell calls out of a model reply."""

from __future__ import annotations

from sprout.fences import shell_blocks
from sprout.models import Completion


class FormatError(Exception):
    """The reply holds no call, too many, or a malformed one; the message tells the model."""


def parse_calls(
    completion: Completion | None, text: str, *, call_format: str, max_calls: int
) -> list[tuple[str, str | None]]:
    """(command, tool-call id) for each call the reply makes; FormatError when it breaks the
    rules. A reviewer's starting turn (no completion) is always read as fenced blocks."""
    if call_format == "tool_calls" and completion is not None:
        calls: list[tuple[str, str | None]] = []
        for call in completion.tool_calls:
            if call.problem is not None:
                raise FormatError(f"tool call {call.name!r}: {call.problem}")
            command = call.arguments.get("command")
            if call.name != "bash" or not isinstance(command, str):
                raise FormatError(
                    f"tool call {call.name!r} with arguments {call.arguments!r}: "
                    "expected the bash tool with a string `command`"
                )
            calls.append((command, call.id))
    else:
        calls = [(block, None) for block in shell_blocks(text)]
    if not calls:
        raise FormatError("the reply runs no command")
    if len(calls) > max_calls:
        raise FormatError(f"the reply runs {len(calls)} commands; at most {max_calls} per turn")
    return calls
