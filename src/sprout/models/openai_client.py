"""`openai/<model>`: any OpenAI-compatible chat-completions server, through the official client.

vLLM, SGLang, llama.cpp's server, Ollama and hosted APIs all speak this
protocol. The official client already retries 429, 5xx and connection
errors with exponential backoff (honouring Retry-After); this module maps what
is left into `ModelError`s that say which input to fix.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import openai

from sprout.models.config import ModelConfig
from sprout.models.types import (
    Choice,
    Completion,
    Message,
    ModelError,
    TokenLogprob,
    ToolCall,
)

OFFICIAL_URL = "https://api.openai.com/v1"
TOP_LOGPROBS = 5
"""Alternatives asked per token when log-probs are wanted: enough for an entropy estimate."""


class OpenAIModel:
    """A chat model behind an OpenAI-compatible HTTP endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        options: ModelConfig | None = None,
    ) -> None:
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not model:
            raise ModelError("bad_input", "model: empty name; use openai/<model>")
        if base_url is None and not api_key:
            raise ModelError(
                "bad_input",
                f"openai/{model}: no --base-url (or OPENAI_BASE_URL), and no OPENAI_API_KEY "
                "for api.openai.com; name your server with --base-url",
            )
        self.name = f"openai/{model}"
        self.model = model
        self.base_url = base_url or OFFICIAL_URL
        self.options = options or ModelConfig()
        self.client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "EMPTY",  # local servers take any key
            timeout=self.options.timeout_s,
            max_retries=self.options.max_retries,
        )

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
        request: dict[str, Any] = {"model": self.model, "messages": messages, "n": n}
        if seed is not None:
            request["seed"] = seed
        if self.options.max_tokens is not None:
            request["max_tokens"] = self.options.max_tokens
        if self.options.extra_body:
            request["extra_body"] = dict(self.options.extra_body)
        if temperature is not None:
            request["temperature"] = temperature
        if logprobs:
            request.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        if tools:
            request["tools"] = tools
        started = time.monotonic()
        try:
            response = self.client.chat.completions.create(**request)
        except openai.AuthenticationError as error:
            raise ModelError(
                "auth", f"{self.base_url}: the API key was refused ({error})"
            ) from None
        except openai.NotFoundError as error:
            raise ModelError(
                "unknown_model", f"{self.base_url}: model {self.model!r} not found ({error})"
            ) from None
        except openai.BadRequestError as error:
            raise ModelError("bad_request", f"{self.base_url}: request refused: {error}") from None
        except openai.APIConnectionError as error:
            raise ModelError(
                "unreachable", f"{self.base_url}: cannot reach the server ({error})"
            ) from None
        except openai.APIStatusError as error:
            raise ModelError(
                "server", f"{self.base_url}: HTTP {error.status_code} after retries: {error}"
            ) from None
        latency = time.monotonic() - started
        return _to_completion(self.base_url, response, latency)


def _to_completion(base_url: str, response: Any, latency: float) -> Completion:
    choices = getattr(response, "choices", None)
    if not choices:
        raise ModelError("malformed", f"{base_url}: the reply has no choices")
    usage = getattr(response, "usage", None)
    parsed = tuple(_to_choice(base_url, choice) for choice in choices)
    if usage is None:
        from sprout.models.estimate import estimate_tokens

        return Completion(
            parsed,
            prompt_tokens=0,
            completion_tokens=sum(estimate_tokens(c.text) for c in parsed),
            estimated=True,
            latency_s=latency,
        )
    details = getattr(usage, "prompt_tokens_details", None)
    return Completion(
        parsed,
        prompt_tokens=int(usage.prompt_tokens or 0),
        completion_tokens=int(usage.completion_tokens or 0),
        cached_tokens=getattr(details, "cached_tokens", None) if details else None,
        latency_s=latency,
    )


def _to_choice(base_url: str, choice: Any) -> Choice:
    message = choice.message
    calls = []
    for call in message.tool_calls or ():
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError as error:
            raise ModelError(
                "malformed",
                f"{base_url}: tool call {call.function.name!r} has invalid JSON arguments "
                f"({error})",
            ) from None
        if not isinstance(arguments, dict):
            raise ModelError(
                "malformed", f"{base_url}: tool call {call.function.name!r} arguments not an object"
            )
        calls.append(ToolCall(call.id, call.function.name, arguments))
    tokens = None
    if choice.logprobs is not None and choice.logprobs.content is not None:
        tokens = tuple(
            TokenLogprob(
                item.token,
                item.logprob,
                {alt.token: alt.logprob for alt in (item.top_logprobs or ())},
            )
            for item in choice.logprobs.content
        )
    return Choice(message.content or "", choice.finish_reason, tuple(calls), tokens)
