"""The actor's two call formats: what a model call is offered, and how a turn's calls and
their observations are written back into the context.

With `bash_blocks` (the default) the model is offered no tool: its reply is plain text
with fenced blocks, and the observations of all its calls come back in one user message.
With `tool_calls` it is offered the one bash tool (`parse.BASH_TOOL`): the reply message
carries its calls by id, and each call's observation is a `tool` message answering its
id, as the OpenAI protocol requires. Both live here so that the actor's loop never asks
which format it speaks; reading the calls out of a reply is `parse.py`'s job.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from sprout.agent.parse import BASH_TOOL
from sprout.tree import CallRecord, Message

Render = Callable[..., str]
"""A template rendered with the actor's settings: `render(name, **context)`."""


def offered_tools(call_format: str) -> list[dict[str, Any]] | None:
    """The tools a model call offers: the bash tool for `tool_calls`, none for fenced blocks."""
    return [BASH_TOOL] if call_format == "tool_calls" else None


def turn_messages(
    text: str, calls: Sequence[tuple[str, str | None]], records: list[CallRecord], render: Render
) -> list[Message]:
    """The messages a turn adds once its `calls` ran: the reply `text` and the observations
    (`records`) in the protocol of its format. The calls' ids tell the format, not the
    config: a reviewer's starting turn is read as fenced blocks in either."""
    reply = reply_message(text, calls)
    if "tool_calls" in reply:
        return [reply] + [
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": render("observation", calls=[record]),
            }
            for (_, call_id), record in zip(calls, records, strict=True)
        ]
    return [reply, {"role": "user", "content": render("observation", calls=records)}]


def reply_message(text: str, calls: Sequence[tuple[str, str | None]]) -> Message:
    """The assistant message of a reply `text` making `calls`: with its tool calls by id when
    the calls came as tool calls (they have ids), as plain text when they came as text."""
    reply: Message = {"role": "assistant", "content": text}
    if calls and all(call_id is not None for _, call_id in calls):
        reply["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": command})},
            }
            for command, call_id in calls
        ]
    return reply


def format_error_messages(text: str, problem: str, render: Render) -> list[Message]:
    """The messages a turn adds when none of its calls can run: the reply `text` and the
    format error the model is shown instead, a user message in either format."""
    reply: Message = {"role": "assistant", "content": text}
    return [reply, {"role": "user", "content": render("format_error", problem=problem)}]
