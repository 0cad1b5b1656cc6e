"""What a model call returns, whichever backend answered it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]
"""One chat message as the OpenAI chat-completions protocol shapes it."""


class ModelError(Exception):
    """A model call that cannot succeed as asked: bad key, unknown model, malformed reply.

    `kind` lets callers record a failure reason instead of crashing a run.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class TokenLogprob:
    """One sampled token with its log-probability and the top alternatives the server sent."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)

    def entropy(self) -> float:
        """Entropy (nats) of the distribution over the returned alternatives, renormalised."""
        probs = [math.exp(lp) for lp in (self.top or {self.token: self.logprob}).values()]
        total = sum(probs)
        return -sum(p / total * math.log(p / total) for p in probs if p > 0) if total else 0.0


@dataclass(frozen=True)
class ToolCall:
    """A call of a function tool, with its arguments already parsed from JSON."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Choice:
    """One sampled reply."""

    text: str
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    logprobs: tuple[TokenLogprob, ...] | None = None


@dataclass(frozen=True)
class Completion:
    """A model call's replies and its token usage.

    Token counts come from the server's `usage` whenever it sends one;
    `estimated` is True only when they were derived from text length instead.
    """

    choices: tuple[Choice, ...]
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None
    estimated: bool = False
    latency_s: float = 0.0

    @property
    def text(self) -> str:
        return self.choices[0].text

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self.choices[0].tool_calls

    @property
    def logprobs(self) -> tuple[TokenLogprob, ...] | None:
        return self.choices[0].logprobs


class Model(Protocol):
    """Anything that completes a chat: a server, local weights, or a scripted oracle."""

    name: str

    def complete(
        self,
        messages: list[Message],
        *,
        n: int = 1,
        temperature: float | None = None,
        logprobs: bool = False,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        """Sample `n` replies to `messages`."""
        ...
