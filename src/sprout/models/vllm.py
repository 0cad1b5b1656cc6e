"""`vllm/<model>`: vLLM's OpenAI-compatible server (0.10.2 or later), token in, token out.

The server's `/tokenize` applies its chat template and tokenizer (one place),
`/detokenize` turns ids back into text; the prompt goes to `/v1/completions`
as a token list with `return_token_ids`, so the reply's ids are the ids vLLM
sampled and the inherited prefix of a branch is never re-rendered (vLLM's
prefix cache serves it). The context length is `/v1/models`' `max_model_len`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from sprout.models.fingerprint import PROBE, probe_sha256
from sprout.models.http_json import JsonServer
from sprout.models.token_server import (
    Generation,
    Sample,
    Sampling,
    checked_sample,
    served_window,
)
from sprout.models.types import Message, ModelError
from sprout.models.window import ContextWindow

_PROBE = "\x00sprout-reply\x00"


class VLLMServer:
    """A `TokenServer` over vLLM's `/tokenize`, `/detokenize` and `/v1/completions`."""

    kind = "vLLM"

    def __init__(self, http: JsonServer, model: str) -> None:
        self.http = http
        self.model = model
        self.base_url = http.base_url

    def _chat_ids(self, messages: list[Message], *, add_generation_prompt: bool) -> list[int]:
        body = {
            "model": self.model,
            "messages": messages,
            "add_generation_prompt": add_generation_prompt,
            "add_special_tokens": False,
        }
        return self._ids(self.http.post("/tokenize", body), "/tokenize")

    def _ids(self, reply: dict[str, Any], route: str) -> list[int]:
        tokens = reply.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise ModelError("malformed", f"{self.base_url}{route}: no list of token ids")
        return tokens

    def render(self, messages: list[Message]) -> str:
        return self.decode(self._chat_ids(messages, add_generation_prompt=True))

    def encode(self, text: str) -> list[int]:
        body = {"model": self.model, "prompt": text, "add_special_tokens": False}
        return self._ids(self.http.post("/tokenize", body), "/tokenize")

    def decode(self, ids: Sequence[int]) -> str:
        reply = self.http.post("/detokenize", {"model": self.model, "tokens": list(ids)})
        text = reply.get("prompt")
        if not isinstance(text, str):
            raise ModelError("malformed", f"{self.base_url}/detokenize: no prompt string")
        return text

    @cached_property
    def _end_of_turn(self) -> int:
        probe = [{"role": "user", "content": "?"}, {"role": "assistant", "content": _PROBE}]
        rendered = self.decode(self._chat_ids(probe, add_generation_prompt=False))
        closing = self.encode(rendered.rpartition(_PROBE)[2]) if _PROBE in rendered else []
        if not closing:
            raise ModelError(
                "template",
                f"{self.base_url}: the chat template closes a reply with no token; a written "
                "reply's end cannot be told",
            )
        return closing[0]

    def end_of_turn(self) -> int:
        """The first token the template puts after a reply (ChatML: ``<|im_end|>``)."""
        return self._end_of_turn

    def fingerprint(self) -> dict[str, Any]:
        ids = self._chat_ids(PROBE, add_generation_prompt=True)
        return {
            "server": self.kind,
            "base_url": self.base_url,
            "model": self.model,
            "probe_sha256": probe_sha256(ids),
            "end_of_turn": self.end_of_turn(),
        }

    def context_window(self) -> ContextWindow | None:
        """`max_model_len` of this model in `/v1/models`."""
        return served_window(self.http, self.model)

    def generate(self, sampling: Sampling) -> Generation:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": list(sampling.prompt),
            "n": sampling.n,
            "logprobs": sampling.top_logprobs,
            "return_token_ids": True,
            "skip_special_tokens": False,
        }
        for key in ("temperature", "seed", "max_tokens"):
            if getattr(sampling, key) is not None:
                body[key] = getattr(sampling, key)
        reply = self.http.post("/v1/completions", body, prompt=sampling.prompt)
        choices = reply.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ModelError("malformed", f"{self.base_url}/v1/completions: no choices")
        ordered = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0)
        usage = reply.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        return Generation(
            tuple(self._sample(choice, sampling.top_logprobs) for choice in ordered),
            cached if isinstance(cached, int) else None,
        )

    def _sample(self, choice: Any, top_logprobs: int) -> Sample:
        """One choice as a `Sample`: a reply that stopped at a token (not a stop string) holds
        it as its last id, as vLLM returns it."""
        if not isinstance(choice, dict):
            raise ModelError(
                "malformed", f"{self.base_url}/v1/completions: a choice is not an object"
            )
        ids = choice.get("token_ids")
        logprobs = choice.get("logprobs")
        if not isinstance(ids, list):
            raise ModelError(
                "malformed",
                f"{self.base_url}/v1/completions: no token_ids in the choice (vLLM 0.10.2 or "
                "later returns them with return_token_ids)",
            )
        if not isinstance(logprobs, dict) or not isinstance(logprobs.get("token_logprobs"), list):
            raise ModelError("malformed", f"{self.base_url}/v1/completions: no token_logprobs")
        tops = logprobs.get("top_logprobs") or []
        return checked_sample(
            self.base_url,
            ids,
            logprobs["token_logprobs"],
            stopped=choice.get("finish_reason") == "stop"
            and not isinstance(choice.get("stop_reason"), str),
            pieces=[str(t) for t in logprobs.get("tokens") or ()],
            top=[dict(t or {}) for t in tops] if top_logprobs else [],
        )
