"""What a model call returns, whichever backend answered it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from sprout.errors import SproutError

Message = dict[str, Any]
"""One chat message as the OpenAI chat-completions protocol shapes it."""


class ModelError(SproutError):
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
    problem: str | None = None
    """Why the arguments the model wrote could not be read (not JSON, not an object):
    the model's mistake, told to it as a format error, never a fault of the server."""


@dataclass(frozen=True)
class Choice:
    """One sampled reply."""

    text: str
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    logprobs: tuple[TokenLogprob, ...] | None = None
    completion_ids: tuple[int, ...] | None = None
    """The reply's token ids as sampled (the stop token included), from token-aware backends."""


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
    prompt_ids: tuple[int, ...] | None = None
    """The exact token ids the model was given, from token-aware backends."""

    @property
    def text(self) -> str:
        return self.choices[0].text

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self.choices[0].tool_calls

    @property
    def logprobs(self) -> tuple[TokenLogprob, ...] | None:
        return self.choices[0].logprobs

    @property
    def completion_ids(self) -> tuple[int, ...] | None:
        return self.choices[0].completion_ids


@dataclass(frozen=True)
class Capabilities:
    """What a model can do, declared by its client: callers ask this, never which model it is."""

    token_ids: bool = False
    """It keeps a rollout's token ids exact (a `TokenModel`: prompt and reply ids, no
    re-tokenising), so its rollouts can be trained on."""
    logprobs: bool = False
    """It can return per-token log-probabilities (the entropy schedule needs them)."""
    structured_output: bool = True
    """It can write the roles' structured replies (analyses, reviews); a model that cannot
    is answered by the roles' heuristics."""
    replays_solution: bool = False
    """It replays the task's reference solution: it is built per task (from the solution's
    steps), and only it may see the task's /solution."""


CHAT = Capabilities()
"""A model that declares nothing: a chat model with no token ids and no log-probs."""


def capabilities(model: object) -> Capabilities:
    """What `model` declares it can do (its `capabilities`), `CHAT` when it declares nothing."""
    found: Capabilities = getattr(model, "capabilities", CHAT)
    return found


class Model(Protocol):
    """Anything that completes a chat: a server, local weights, or a scripted oracle."""

    name: str
    capabilities: Capabilities

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
        """Sample `n` replies to `messages`; `seed` names the sample (its place in the rollout
        tree), so that a backend that honours it draws the same replies again."""
        ...


class TokenModel(Model, Protocol):
    """A model that keeps a rollout's token ids exact (`hf/PATH`).

    The actor hands it the stored ids of the context so far (`prefix_ids`):
    it renders only what the messages add after them, so a branch continues
    from its parent's ids and nothing earlier is ever re-tokenized.
    """

    def complete(
        self,
        messages: list[Message],
        *,
        n: int = 1,
        temperature: float | None = None,
        logprobs: bool = False,
        tools: list[dict[str, Any]] | None = None,
        seed: int | None = None,
        prefix_ids: Sequence[int] | None = None,
    ) -> Completion:
        """Sample `n` replies; the prompt is `prefix_ids` + `context_ids(messages, prefix_ids)`."""
        ...

    def context_ids(self, messages: list[Message], prefix_ids: Sequence[int]) -> tuple[int, ...]:
        """The ids `messages` add after `prefix_ids`, up to and including the generation prompt."""
        ...

    def encode_reply(self, text: str) -> tuple[int, ...]:
        """`text` as a reply this model could have written, ending with its end-of-turn token."""
        ...

    def tokenizer_fingerprint(self) -> dict[str, Any]:
        """What identifies the tokenizer (``sha256``), recorded in the run's meta."""
        ...


def token_model(model: Model) -> TokenModel | None:
    """`model` when it keeps token ids exact (its capabilities say `token_ids`), else None."""
    return cast(TokenModel, model) if capabilities(model).token_ids else None
