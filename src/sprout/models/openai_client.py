"""`openai/<model>`: any OpenAI-compatible chat-completions server, through the official client.

vLLM, SGLang, llama.cpp's server, Ollama and hosted APIs all speak this
protocol. The official client's own retries are off: `models.retrying` asks
again and tells each retry as it happens.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import openai

from sprout.models.config import ModelConfig
from sprout.models.retrying import (
    CONNECT_TIMEOUT_S,
    Retryable,
    is_retried_status,
    retry_after,
    short,
    tell_on_stderr,
    waiting_notice,
    with_retries,
)
from sprout.models.servers import ServerPool, split_urls
from sprout.models.types import (
    Capabilities,
    Choice,
    Completion,
    Message,
    ModelError,
    TokenLogprob,
    ToolCall,
)
from sprout.models.window import OVERRIDE, ContextWindow

OFFICIAL_URL = "https://api.openai.com/v1"
TOP_LOGPROBS = 5
"""Alternatives asked per token when log-probs are wanted: enough for an entropy estimate."""


class OpenAIModel:
    """A chat model behind an OpenAI-compatible HTTP endpoint, or several serving the same
    model (`base_url` comma-separated, spread by load as `models.servers` says)."""

    capabilities = Capabilities(logprobs=True)
    """Log-probs when its server returns them; the text is re-tokenised by the server."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        options: ModelConfig | None = None,
        on_retry: Callable[[str], None] = tell_on_stderr,
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
        urls = split_urls(base_url or OFFICIAL_URL)
        self.base_url = ",".join(urls)
        self.pool = ServerPool(urls)
        self.options = options or ModelConfig()
        self.on_retry = on_retry
        timeout = self.options.timeout_s
        self.clients = {
            url: openai.OpenAI(
                base_url=url,
                api_key=api_key or "EMPTY",  # local servers take any key
                timeout=openai.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout)),
                max_retries=0,  # retried in `complete`, where each retry is told
            )
            for url in urls
        }

    def context_window(self) -> ContextWindow | None:
        """`[model] context_tokens`: an OpenAI-compatible server says no context length of
        its own; its prompts' tokens are estimated."""
        tokens = self.options.context_tokens
        return None if tokens is None else ContextWindow(tokens, OVERRIDE, self.options.max_tokens)

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
        return with_retries(
            lambda: self.pool.call(lambda url: self._ask(url, request)),
            self.options.max_retries,
            self.on_retry,
        )

    def _ask(self, base_url: str, request: dict[str, Any]) -> Completion:
        started = time.monotonic()
        response = self._create(base_url, request)
        try:
            return _to_completion(base_url, response, time.monotonic() - started)
        except (AttributeError, TypeError, ValueError) as error:  # a field null or odd
            raise ModelError(
                "malformed",
                f"{base_url}: the reply is not a chat completion ({short(str(error))})",
            ) from None

    def _create(self, base_url: str, request: dict[str, Any]) -> Any:
        """One request; `Retryable` for what may pass on a retry, `ModelError` for the rest."""
        try:
            with waiting_notice(base_url, self.options.timeout_s, self.on_retry):
                return self.clients[base_url].chat.completions.create(**request)
        except openai.APITimeoutError:
            raise Retryable(
                "timeout",
                f"{base_url}: no reply within {self.options.timeout_s:g} s ([model] timeout_s)",
            ) from None
        except openai.APIConnectionError as error:
            raise Retryable(
                "unreachable", f"{base_url}: cannot reach the server ({error})"
            ) from None
        except openai.AuthenticationError as error:
            raise ModelError("auth", f"{base_url}: the API key was refused ({error})") from None
        except openai.NotFoundError as error:
            raise ModelError(
                "unknown_model", f"{base_url}: model {self.model!r} not found ({error})"
            ) from None
        except openai.BadRequestError as error:
            raise ModelError("bad_request", f"{base_url}: request refused: {error}") from None
        except openai.APIStatusError as error:
            status = error.status_code
            message = f"{base_url}: HTTP {status}: {short(str(error))}"
            if is_retried_status(status):
                headers = getattr(error.response, "headers", None)
                raise Retryable("server", message, retry_after(headers)) from None
            raise ModelError("server", message) from None
        except (openai.APIResponseValidationError, ValueError) as error:
            # a body that is not JSON (an HTML error page of a proxy, say) or not a completion
            raise ModelError(
                "malformed",
                f"{base_url}: the reply is not a chat completion ({short(str(error))})",
            ) from None


def _to_completion(base_url: str, response: Any, latency: float) -> Completion:
    if isinstance(response, str | bytes):  # the client hands back a body that is not JSON
        raise ModelError(
            "malformed", f"{base_url}: the reply is not a chat completion: {short(str(response))}"
        )
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


def _to_tool_call(call: Any) -> ToolCall:
    name = call.function.name
    try:
        arguments = json.loads(call.function.arguments or "{}")
    except json.JSONDecodeError as error:
        return ToolCall(call.id, name, {}, f"its arguments are not valid JSON ({error})")
    if not isinstance(arguments, dict):
        return ToolCall(call.id, name, {}, "its arguments are not a JSON object")
    return ToolCall(call.id, name, arguments)


def _to_choice(base_url: str, choice: Any) -> Choice:
    message = choice.message
    calls = []
    for call in message.tool_calls or ():
        calls.append(_to_tool_call(call))
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
