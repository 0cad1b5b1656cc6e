"""Reading shell calls out of a model reply: fenced blocks, or calls to the one bash tool
the model is offered."""

from __future__ import annotations

from typing import Any

from sprout.fences import shell_blocks
from sprout.models import Completion
from sprout.workspace import Fork

BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run one non-interactive bash command in the repository's directory.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the command"}},
            "required": ["command"],
        },
    },
}


Calls = list[tuple[str, str | None]]
"""(command, tool-call id) of each call a reply makes; the id is None for text calls."""


class FormatError(Exception):
    """The reply holds no call, too many, or a malformed one; the message tells the model."""


def parse_calls(
    completion: Completion | None, text: str, *, call_format: str, max_calls: int
) -> Calls:
    """(command, tool-call id) for each call the reply makes; FormatError when it breaks the
    rules. A reviewer's starting turn (no completion) is always read as fenced blocks."""
    if call_format == "tool_calls" and completion is not None:
        calls: Calls = []
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


def check_commands(fork: Fork, commands: list[str]) -> None:
    """FormatError, before any call runs, when the workspace would refuse one of `commands`
    (a NUL byte, text that is not Unicode, over `limits.command_bytes`): the model wrote
    it, so the model is told, and the turn is recorded like any other format error."""
    for number, command in enumerate(commands, start=1):
        problem = fork.check_command(command)
        if problem is not None:
            raise FormatError(f"command {number} {problem}")
