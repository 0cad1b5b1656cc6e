"""Token-exact rollouts from a model server: the ids it sampled are the ids trained on.

`TokenServerModel` is the `TokenModel` of every server that takes a prompt as
token ids and returns the ids it sampled (`vllm/`, `sglang/`, `llamacpp/`):
the actor hands it the stored ids of the context so far, it renders and
tokenizes only what the new messages add (`chat_tokens.added_ids`, through
the server's own template and tokenizer or a local one), and sends the whole
prompt as ids, so a branch's inherited prefix is never re-rendered and the
server's prefix cache serves it. Each sampled token's log-probability comes
back with it (the behaviour policy's, for the learner's importance ratio).
The wire formats live in one module per server, behind `TokenServer`, and so does
how each says its context window (`sprout.models.window`): a prompt over it is refused
here, before it is sent, as `hf/` refuses one.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sprout.models.chat_tokens import TextTokenizer, added_ids
from sprout.models.types import (
    Capabilities,
    Choice,
    Completion,
    Message,
    ModelError,
    TokenLogprob,
)
from sprout.models.window import OVERRIDE, ContextWindow

if TYPE_CHECKING:
    from sprout.models.http_json import JsonServer

TOP_LOGPROBS = 5
"""Alternatives asked per token when the caller wants them (the entropy schedule)."""


@dataclass(frozen=True)
class Sample:
    """One reply as the server sampled it."""

    ids: tuple[int, ...]
    """The sampled ids, the end-of-turn token included when the reply stopped at it."""
    logprobs: tuple[float, ...]
    """The log-probability of each sampled id (same length as `ids`)."""
    stopped: bool
    """True when the reply ended at an end-of-turn token, False when it hit the length limit."""
    pieces: tuple[str, ...] = ()
    """Each id's text, when the server sent it (for the entropy schedule's alternatives)."""
    top: tuple[dict[str, float], ...] = ()
    """The top alternatives of each position, when asked for and sent."""


@dataclass(frozen=True)
class Sampling:
    """What to sample after a prompt of ids."""

    prompt: tuple[int, ...]
    n: int = 1
    temperature: float | None = None
    seed: int | None = None
    """The seed of the first reply; a server that samples one reply per request seeds the
    others `seed + 1`, `seed + 2`, ..."""
    top_logprobs: int = 0
    """Alternatives per token to return (0: only the sampled token's log-prob)."""
    max_tokens: int | None = None


@dataclass(frozen=True)
class Generation:
    samples: tuple[Sample, ...]
    cached_tokens: int | None = None
    """Prompt tokens the server reused from its cache, when it says."""


class TokenServer(TextTokenizer, Protocol):
    """One server's wire format: its template and tokenizer, and sampling from ids."""

    base_url: str

    def end_of_turn(self) -> int:
        """The id that closes an assistant reply (ChatML: ``<|im_end|>``)."""
        ...

    def generate(self, sampling: Sampling) -> Generation:
        """`sampling.n` replies sampled after its prompt, each with its ids and log-probs."""
        ...

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the tokenizer and template this server applies."""
        ...

    def context_window(self) -> ContextWindow | None:
        """The context length the server reports (asked once); None when it says none."""
        ...


class TokenServerModel:
    """A `TokenModel` whose replies a server samples from ids (see the module's doc)."""

    capabilities = Capabilities(token_ids=True, logprobs=True)

    def __init__(
        self,
        name: str,
        server: TokenServer,
        *,
        max_tokens: int | None = None,
        context_tokens: int | None = None,
    ) -> None:
        """`context_tokens` (`[model] context_tokens`) replaces the window the server reports."""
        self.name = name
        self.server = server
        self.max_tokens = max_tokens
        self.context_tokens = context_tokens
        self._window: tuple[ContextWindow | None] | None = None
        self._window_lock = threading.Lock()

    def context_window(self) -> ContextWindow | None:
        """The window `[model] context_tokens` sets, else the one the server reports (asked
        once); its replies are `max_tokens` long at most."""
        with self._window_lock:
            if self._window is None:
                found = (
                    ContextWindow(self.context_tokens, OVERRIDE)
                    if self.context_tokens is not None
                    else self.server.context_window()
                )
                if found is not None:
                    found = dataclasses.replace(found, reply_tokens=self.max_tokens)
                self._window = (found,)
            return self._window[0]

    def count_tokens(self, messages: list[Message]) -> int:
        """The tokens of `messages` as a prompt, by the server's own template and tokenizer."""
        return len(self.context_ids(messages, ()))

    def tokenizer_fingerprint(self) -> dict[str, Any]:
        return {**self.server.fingerprint(), "model": self.name}

    def context_ids(self, messages: list[Message], prefix_ids: Sequence[int]) -> tuple[int, ...]:
        return added_ids(self.server, self.name, messages, prefix_ids)

    def encode_reply(self, text: str) -> tuple[int, ...]:
        return (*self.server.encode(text), self.server.end_of_turn())

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
        """`n` replies sampled after `prefix_ids` + what `messages` add, as ids."""
        if tools:
            raise ModelError(
                "bad_input",
                f"{self.name}: tool calls are not parsed from token-exact replies; use the "
                "bash_blocks call format",
            )
        if n < 1:
            raise ModelError("bad_input", f"{self.name}: n must be at least 1, got {n}")
        started = time.monotonic()
        prefix = tuple(int(i) for i in prefix_ids or ())
        prompt = prefix + self.context_ids(messages, prefix)
        top = TOP_LOGPROBS if logprobs else 0
        generation = self.server.generate(
            Sampling(prompt, n, temperature, seed, top, self._reply_tokens(len(prompt)))
        )
        if len(generation.samples) != n:
            raise ModelError(
                "malformed",
                f"{self.server.base_url}: asked for {n} replies, got {len(generation.samples)}",
            )
        choices = tuple(self._choice(sample) for sample in generation.samples)
        return Completion(
            choices,
            prompt_tokens=len(prompt),
            completion_tokens=sum(len(sample.ids) for sample in generation.samples),
            cached_tokens=generation.cached_tokens,
            latency_s=time.monotonic() - started,
            prompt_ids=prompt,
        )

    def _reply_tokens(self, prompt: int) -> int | None:
        """`max_tokens`, cut to what the window leaves after a prompt of `prompt` tokens (None
        stays None: the server's own choice); a `ModelError` ("context") when the window
        leaves nothing, raised before anything is sent."""
        window = self.context_window()
        if window is None:
            return self.max_tokens
        if prompt >= window.tokens:
            raise ModelError(
                "context",
                f"{self.name}: the prompt has {prompt} tokens, more than {window.describe()}",
            )
        if self.max_tokens is None:
            return None
        return min(self.max_tokens, window.tokens - prompt)

    def _choice(self, sample: Sample) -> Choice:
        ids = sample.ids[:-1] if sample.stopped else sample.ids
        pieces = sample.pieces or tuple("" for _ in sample.ids)
        tops = sample.top or tuple({} for _ in sample.ids)
        tokens = tuple(
            TokenLogprob(piece, lp, top)
            for piece, lp, top in zip(pieces, sample.logprobs, tops, strict=True)
        )
        reason = "stop" if sample.stopped else "length"
        return Choice(self.server.decode(ids), reason, (), tokens, sample.ids)


def checked_sample(
    base_url: str,
    ids: Sequence[Any],
    logprobs: Sequence[Any],
    *,
    stopped: bool,
    pieces: Sequence[str] = (),
    top: Sequence[dict[str, float]] = (),
) -> Sample:
    """A `Sample` from a server's fields, or a `ModelError` ("malformed": a server fault) when
    they are not ids with one log-prob each."""
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise ModelError("malformed", f"{base_url}: the sampled token ids are not integers")
    if len(logprobs) != len(ids) or not all(isinstance(lp, int | float) for lp in logprobs):
        raise ModelError(
            "malformed",
            f"{base_url}: {len(ids)} sampled ids but {len(logprobs)} log-probs",
        )
    if any(len(extra) not in (0, len(ids)) for extra in (pieces, top)):
        raise ModelError("malformed", f"{base_url}: token texts or alternatives not one per id")
    return Sample(
        tuple(ids),
        tuple(float(lp) for lp in logprobs),
        stopped,
        tuple(pieces),
        tuple(top),
    )


def served_window(http: JsonServer, name: str) -> ContextWindow | None:
    """The window of model `name` in `/v1/models` (`max_model_len`, as vLLM and SGLang list
    it; the first model listed when none is called `name`); None when the server lists
    none, or cannot be asked."""
    try:
        cards = http.get("/v1/models").get("data")
    except ModelError:
        return None
    listed = [c for c in cards if isinstance(c, dict)] if isinstance(cards, list) else []
    named = [c for c in listed if c.get("id") == name] or listed[:1]
    length = named[0].get("max_model_len") if named else None
    if not isinstance(length, int) or isinstance(length, bool) or length < 1:
        return None
    return ContextWindow(length, f"{http.base_url}/v1/models max_model_len")
