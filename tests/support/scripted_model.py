"""A scripted model: deterministic replies in the default format, and a record of what it
was shown, for the actor, tree and role tests. Nothing it stands in for is mocked but the
model itself."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sprout.models import Choice, Completion, Message, TokenLogprob, ToolCall
from sprout.models.window import ContextWindow

SUBMIT = "SPROUT_SUBMIT"
"""The default submit sentinel: a call that prints it ends the attempt."""


def bash(*commands: str, thought: str = "Next step.") -> str:
    """A reply in the default format: a thought, then one fenced ```bash block per command."""
    blocks = "".join(f"```bash\n{command}\n```\n" for command in commands)
    return f"{thought}\n\n{blocks}"


def submit() -> str:
    """A reply whose only call prints the default submit sentinel."""
    return bash(f"echo {SUBMIT}", thought="Done.")


def reply(
    text: str = "",
    *,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    tool_calls: Iterable[ToolCall] = (),
    logprobs: tuple[TokenLogprob, ...] | None = None,
) -> Completion:
    """A completion as a server would return it, with fixed token counts."""
    return Completion(
        choices=(Choice(text, "stop", tuple(tool_calls), logprobs),),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


class ScriptedModel:
    """Returns scripted replies in order (a str, a Completion, or an exception to raise) and
    records a private copy of every message list and keyword it was called with."""

    def __init__(self, replies: Iterable[str | Completion | BaseException], name: str = "scripted"):
        self.name = name
        self.replies: deque[str | Completion | BaseException] = deque(replies)
        self.seen: list[list[Message]] = []
        self.calls: list[dict[str, Any]] = []

    def complete(
        self,
        messages: list[Message],
        *,
        n: int = 1,
        temperature: float | None = None,
        logprobs: bool = False,
        tools: list[dict[str, Any]] | None = None,
        seed: int | None = None,
    ) -> Completion:
        self.seen.append(json.loads(json.dumps(messages)))
        self.calls.append(
            {"n": n, "temperature": temperature, "logprobs": logprobs, "tools": tools, "seed": seed}
        )
        if not self.replies:
            raise AssertionError(f"the script ran out: call {len(self.seen)} was not scripted")
        item = self.replies.popleft()
        if isinstance(item, BaseException):
            raise item
        return item if isinstance(item, Completion) else reply(item)


class WindowedModel(ScriptedModel):
    """A scripted model with a context window of `tokens` (its replies `reply_tokens` long at
    most) and a tokenizer that counts one token per word, four more per message: what a
    client that knows its window and holds its tokenizer declares."""

    def __init__(
        self,
        replies: Iterable[str | Completion | BaseException],
        tokens: int,
        reply_tokens: int | None = None,
    ) -> None:
        super().__init__(replies, name="windowed")
        self.window = ContextWindow(tokens, "the script", reply_tokens)

    def context_window(self) -> ContextWindow:
        return self.window

    def count_tokens(self, messages: list[Message]) -> int:
        return sum(len(str(m.get("content") or "").split()) + 4 for m in messages)


@dataclass
class FakeClock:
    """A clock that stands still until a test moves it: time passes only where the test says
    (a model that thinks for ten seconds), never with the machine's speed."""

    now: float = 0.0

    def __call__(self) -> float:
        return self.now


class SlowModel(ScriptedModel):
    """A scripted model that takes `seconds` of `clock` over every reply."""

    def __init__(
        self, replies: Iterable[str | Completion | BaseException], clock: FakeClock, seconds: float
    ) -> None:
        super().__init__(replies)
        self.clock = clock
        self.seconds = seconds

    def complete(self, messages: list[Message], **options: Any) -> Completion:
        self.clock.now += self.seconds
        return super().complete(messages, **options)


def dumps(messages: list[Message]) -> str:
    """Messages as bytes on the wire: equal strings mean byte-for-byte equal contexts."""
    return json.dumps(messages, sort_keys=False, ensure_ascii=False)
