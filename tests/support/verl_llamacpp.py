"""verl's rollout `generate` served by a llama.cpp `llama-server`, for tests with no GPU.

It answers as verl's `LLMServerClient.generate` does (async, a real verl `TokenOutput`:
the sampled ids with the stop token kept, one log-prob each when `logprobs` is asked,
`stop_reason` "completed" at a stop token and at the length limit alike), sampled through
sprout's own `LlamaCppServer`, so the wire format is the one sprout already speaks. It
holds only the server's URL, so it pickles as verl's clients must to reach Ray workers.
"""

from __future__ import annotations

import asyncio
from typing import Any

from verl.workers.rollout.replica import TokenOutput

from sprout.models.http_json import JsonServer
from sprout.models.llamacpp import LlamaCppServer
from sprout.models.token_server import Sampling


class LlamaCppVerlClient:
    """verl's `generate(request_id, prompt_ids=..., sampling_params=...)` over llama-server.

    A plain class, as verl's own clients are: hydra, which builds each agent loop with its
    `server_manager`, turns a dataclass into a config node that has no methods."""

    def __init__(self, url: str, timeout_s: float = 120.0) -> None:
        self.url = url
        self.timeout_s = timeout_s

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]
    ) -> TokenOutput:
        """One reply after `prompt_ids`, sampled in a thread (sprout's HTTP client blocks)."""
        return await asyncio.to_thread(self._generate, list(prompt_ids), dict(sampling_params))

    def _generate(self, prompt_ids: list[int], params: dict[str, Any]) -> TokenOutput:
        server = LlamaCppServer(JsonServer(self.url, timeout_s=self.timeout_s, retries=0))
        sample = server.generate(sampling(prompt_ids, params)).samples[0]
        return TokenOutput(
            token_ids=list(sample.ids),
            log_probs=list(sample.logprobs) if params.get("logprobs") else None,
            stop_reason="completed",
        )


def sampling(prompt_ids: list[int], params: dict[str, Any]) -> Sampling:
    """verl's sampling params as sprout's `Sampling`. `LlamaCppServer` sends no top_p, top_k
    or repetition penalty, so a value that would change sampling is refused (a ValueError,
    as verl's servers refuse bad params) rather than ignored; llama.cpp stops at its
    end-of-generation tokens, which are the `stop_token_ids` a `VerlServer` asks for."""
    top_p, top_k = params.get("top_p", 1.0), params.get("top_k", -1)
    penalty = params.get("repetition_penalty", 1.0)
    if top_p < 1.0 or top_k > 0 or penalty != 1.0:
        raise ValueError(
            f"top_p {top_p}, top_k {top_k}, repetition_penalty {penalty}: the llama.cpp "
            "adapter samples from the model's whole distribution only (1.0, -1, 1.0)"
        )
    return Sampling(
        tuple(prompt_ids),
        temperature=params.get("temperature"),
        seed=params.get("seed"),
        max_tokens=params.get("max_tokens"),
    )
