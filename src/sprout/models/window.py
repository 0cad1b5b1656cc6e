"""A model's context window: how many tokens it holds, and a prompt's tokens counted against it.

A client that knows its window says so with `context_window()`: a local model from its
config, a token-exact server from what it reports (llama.cpp's `/props`, vLLM's and
SGLang's `/v1/models`), any of them overridden by `[model] context_tokens`. A client
that holds the model's tokenizer counts a conversation exactly (`count_tokens`); the
others' counts are `estimate_tokens`'s. A client that says nothing has no known window,
and its callers budget nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sprout.models.estimate import estimate_tokens
from sprout.models.types import Message

OVERRIDE = "[model] context_tokens"
"""The source of a window the run's settings set."""
MESSAGE_TOKENS = 8
"""What a chat template adds around each message (role markers, separators), estimated."""


@dataclass(frozen=True)
class ContextWindow:
    """The tokens a model's context holds, and where that figure came from."""

    tokens: int
    """Prompt and reply together."""
    source: str
    """Where the figure was read, for messages: `config.json max_position_embeddings`,
    `http://gpu1:8000/v1/models max_model_len`, `[model] context_tokens`."""
    reply_tokens: int | None = None
    """The longest reply the client asks for (`hf/`'s max_new_tokens, `[model] max_tokens`);
    None when the server decides."""

    def describe(self) -> str:
        """`the model's context of 4096 tokens (config.json max_position_embeddings)`."""
        return f"the model's context of {self.tokens} tokens ({self.source})"


def context_window(model: object) -> ContextWindow | None:
    """`model`'s window, as its client finds it (`context_window()`); None when unknown."""
    find = getattr(model, "context_window", None)
    found: ContextWindow | None = find() if callable(find) else None
    return found


def prompt_tokens(model: object, messages: list[Message]) -> tuple[int, bool]:
    """(tokens, exact): `messages` as `model`'s prompt, counted by its tokenizer when its
    client has one (`count_tokens`), else estimated from their length."""
    count = getattr(model, "count_tokens", None)
    if callable(count):
        return int(count(messages)), True
    return sum(_estimate(message) for message in messages), False


def _estimate(message: Message) -> int:
    content: Any = message.get("content")
    return estimate_tokens(content if isinstance(content, str) else str(content or "")) + (
        MESSAGE_TOKENS
    )
