"""`llamacpp/<model>`: llama.cpp's `llama-server`, spoken in its native routes.

The server applies its own chat template (`/apply-template`) and tokenizer
(`/tokenize`, `/detokenize`), so the template is applied in one place; the
prompt goes to `/completion` as a token array with `return_tokens` and
`n_probs`, and `cache_prompt` lets a branch's inherited prefix be served from
the server's KV cache. `/completion` samples one reply per request, so `n`
replies are `n` requests, seeded `seed`, `seed + 1`, ... The context length is
`/props`' `n_ctx` (of one slot: what one request may hold).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from sprout.models.http_json import JsonServer
from sprout.models.token_server import Generation, Sample, Sampling, checked_sample
from sprout.models.types import Message, ModelError
from sprout.models.window import ContextWindow


class LlamaCppServer:
    """A `TokenServer` over llama-server's `/apply-template`, `/tokenize`, `/completion`."""

    kind = "llama.cpp"

    def __init__(self, http: JsonServer) -> None:
        self.http = http
        self.base_url = http.base_url

    def render(self, messages: list[Message]) -> str:
        prompt = self.http.post("/apply-template", {"messages": messages}).get("prompt")
        if not isinstance(prompt, str):
            raise ModelError("malformed", f"{self.base_url}/apply-template: no prompt string")
        return prompt

    def encode(self, text: str) -> list[int]:
        body = {"content": text, "add_special": False, "parse_special": True}
        tokens = self.http.post("/tokenize", body).get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise ModelError("malformed", f"{self.base_url}/tokenize: no list of token ids")
        return tokens

    def decode(self, ids: Sequence[int]) -> str:
        content = self.http.post("/detokenize", {"tokens": list(ids)}).get("content")
        if not isinstance(content, str):
            raise ModelError("malformed", f"{self.base_url}/detokenize: no content string")
        return content

    @cached_property
    def _props(self) -> dict[str, Any]:
        return self.http.get("/props")

    def end_of_turn(self) -> int:
        """The id of the server's end-of-sequence token, which its templates close a turn with
        (llama.cpp stops at any end-of-generation token; the reply keeps the one it hit)."""
        eos = self._props.get("eos_token")
        ids = self.encode(eos) if isinstance(eos, str) and eos else []
        if len(ids) != 1:
            raise ModelError(
                "malformed",
                f"{self.base_url}/props: no eos_token that is one token ({eos!r}); a written "
                "reply's end cannot be told",
            )
        return ids[0]

    def context_window(self) -> ContextWindow | None:
        """`default_generation_settings.n_ctx` in `/props`: one slot's context, which is what
        a request may fill (`--ctx-size` over `--parallel` slots)."""
        try:
            settings = self._props.get("default_generation_settings")
        except ModelError:
            return None
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        if not isinstance(n_ctx, int) or isinstance(n_ctx, bool) or n_ctx < 1:
            return None
        return ContextWindow(n_ctx, f"{self.base_url}/props n_ctx")

    def fingerprint(self) -> dict[str, Any]:
        props = self._props
        template = props.get("chat_template", "")
        return {
            "server": self.kind,
            "base_url": self.base_url,
            "model_path": props.get("model_path", ""),
            "chat_template_sha256": hashlib.sha256(str(template).encode()).hexdigest(),
            "eos_token": props.get("eos_token", ""),
            "build_info": props.get("build_info", ""),
        }

    def generate(self, sampling: Sampling) -> Generation:
        body: dict[str, Any] = {
            "prompt": list(sampling.prompt),
            "n_predict": -1 if sampling.max_tokens is None else sampling.max_tokens,
            "n_probs": max(1, sampling.top_logprobs),
            "return_tokens": True,
            "cache_prompt": True,
            "stream": False,
        }
        if sampling.temperature is not None:
            body["temperature"] = sampling.temperature
        samples, cached = [], []
        for number in range(sampling.n):
            if sampling.seed is not None:
                body["seed"] = sampling.seed + number
            reply = self.http.post("/completion", body, prompt=sampling.prompt)
            samples.append(self._sample(reply, sampling.top_logprobs))
            timings = reply.get("timings")  # `tokens_cached` counts the whole slot, not reuse
            if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
                cached.append(timings["cache_n"])
        return Generation(tuple(samples), cached[0] if cached else None)

    def _sample(self, reply: dict[str, Any], top_logprobs: int) -> Sample:
        """One `/completion` reply as a `Sample`; its probabilities are the model's own
        (llama.cpp reports them before the sampling chain: temperature 1)."""
        ids = reply.get("tokens")
        probs = reply.get("completion_probabilities")
        if not isinstance(ids, list) or not isinstance(probs, list):
            raise ModelError(
                "malformed",
                f"{self.base_url}/completion: no tokens or completion_probabilities in "
                f"{json.dumps(sorted(reply))[:200]}",
            )
        if reply.get("stop_type") == "limit" and len(probs) < len(ids):
            # llama.cpp sends a token's probability with its text, and the text of a character
            # the length limit cut in two never comes: those last ids are left out, and the
            # cut reply ends before the character (what is kept is what it sampled).
            ids = ids[: len(probs)]
        try:
            logprobs = [float(p["logprob"]) for p in probs]
            pieces = [str(p.get("token", "")) for p in probs]
            top = [
                {str(t["token"]): float(t["logprob"]) for t in p.get("top_logprobs", ())}
                if top_logprobs
                else {}
                for p in probs
            ]
        except (KeyError, TypeError, ValueError):
            raise ModelError(
                "malformed", f"{self.base_url}/completion: a probability without a logprob"
            ) from None
        return checked_sample(
            self.base_url,
            ids,
            logprobs,
            stopped=reply.get("stop_type") == "eos",
            pieces=pieces,
            top=top,
        )
