"""verl's rollout servers as a sprout `TokenServer`: inside verl, every model call sprout
makes (actor, analyst, reviewer) is sampled by the servers verl trains, as token ids.

verl hands an agent loop its `server_manager` (an async client: `generate(request_id,
prompt_ids=..., sampling_params=...)`) and the HF tokenizer its trainer tokenizes with;
the template and tokenizer sprout renders with are that one (`HFTokenizer.of`), so the
ids sprout stores are the ids verl trains on. sprout's search plays a group from worker
threads, while the client's coroutines belong to verl's event loop: each call is handed
to that loop (`asyncio.run_coroutine_threadsafe`) and waited for from the calling thread.

verl's servers say `stop_reason` "completed" whether a reply ended at its end-of-turn
token or at `max_tokens`, and keep the stop token in `token_ids` (vLLM and SGLang both),
so a reply stopped when its last id is the end-of-turn token; that token is also sent
as a stop id, so a server stops there whatever its model's own EOS ids are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, Protocol
from uuid import uuid4

from sprout.models.hf_tokenizer import HFTokenizer, LocalTemplate, first_line
from sprout.models.token_server import Generation, Sample, Sampling, checked_sample
from sprout.models.types import ModelError
from sprout.models.window import ContextWindow

TIMEOUT_S = 1800.0
"""How long one call waits for its replies: verl queues requests behind a whole step's
rollouts (and behind a weight sync), so minutes are normal; a hung server is not."""


class VerlOutput(Protocol):
    """What sprout reads of verl's `TokenOutput`."""

    @property
    def token_ids(self) -> Sequence[int]: ...

    @property
    def log_probs(self) -> Sequence[float] | None: ...

    @property
    def stop_reason(self) -> str | None:
        """'completed' (at a stop token or the length limit), 'aborted', or None."""
        ...


class VerlClient(Protocol):
    """verl's `LLMServerClient` (an agent loop's `server_manager`), as sprout calls it."""

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]
    ) -> VerlOutput: ...


class VerlServer(LocalTemplate):
    """A `TokenServer` whose replies verl's rollout servers sample (see the module's doc)."""

    kind = "verl"

    def __init__(
        self,
        client: VerlClient,
        tokenizer: Any,
        name: str,
        loop: asyncio.AbstractEventLoop,
        *,
        sampling_params: Mapping[str, Any],
        context_tokens: int | None = None,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        """`sampling_params`: the dict verl passes the loop's `run()` (its rollout config's
        temperature, top_p, top_k, ...), sent with every call; `context_tokens`: what one
        sequence may hold (`rollout.prompt_length + rollout.response_length`, or the
        server's `max_model_len`), None when unknown."""
        self.client = client
        self.tokenizer = HFTokenizer.of(tokenizer, name)
        self.name = name
        self.loop = loop
        self.sampling_params = dict(sampling_params)
        self.context_tokens = context_tokens
        self.timeout_s = timeout_s
        self.base_url = f"verl://{name}"

    def context_window(self) -> ContextWindow | None:
        """The window verl's rollout config gives (`context_tokens`); verl's servers are not
        asked: the manager routes each request to any of them."""
        if self.context_tokens is None:
            return None
        return ContextWindow(self.context_tokens, f"{self.base_url} rollout config")

    def generate(self, sampling: Sampling) -> Generation:
        """`sampling.n` replies, each its own request to verl, sent together. sprout's seed is
        not sent: whether sampling is reproducible is verl's choice (`full_determinism`);
        nor are alternatives asked, as verl returns only the sampled token's log-prob."""
        params = self._params(sampling)
        replies = self._wait(self._replies(list(sampling.prompt), params, sampling.n))
        return Generation(tuple(self._sample(reply) for reply in replies))

    def _params(self, sampling: Sampling) -> dict[str, Any]:
        """verl's sampling params with sprout's choices on top; log-probs always, as the
        learner's importance ratio needs the behaviour policy's."""
        params = {**self.sampling_params, "logprobs": True}
        stops = list(params.get("stop_token_ids") or ())
        params["stop_token_ids"] = [*stops, self.end_of_turn()]
        if sampling.temperature is not None:
            params["temperature"] = sampling.temperature
        if sampling.max_tokens is not None:
            params["max_tokens"] = sampling.max_tokens
        return params

    async def _replies(self, prompt: list[int], params: dict[str, Any], n: int) -> list[VerlOutput]:
        # A copy each: verl's servers pop keys off the dict they are given.
        calls = (
            self.client.generate(uuid4().hex, prompt_ids=list(prompt), sampling_params=dict(params))
            for _ in range(n)
        )
        return list(await asyncio.gather(*calls))

    def _wait(self, replies: Coroutine[Any, Any, list[VerlOutput]]) -> list[VerlOutput]:
        """The replies, awaited on verl's loop from this thread; a `ModelError` of a server
        fault's kind when the client fails or does not answer in time."""
        if _running_loop() is self.loop:
            replies.close()
            raise ModelError(
                "bad_input",
                f"{self.base_url}: generate was called on verl's event loop, which it would "
                "block; call it from a worker thread (asyncio.to_thread)",
            )
        future = asyncio.run_coroutine_threadsafe(replies, self.loop)
        try:
            return future.result(self.timeout_s)
        except TimeoutError:
            future.cancel()
            raise ModelError(
                "timeout", f"{self.base_url}: verl's server gave no reply in {self.timeout_s:g} s"
            ) from None
        except Exception as error:
            raise ModelError(
                "server", f"{self.base_url}: verl's server failed: {first_line(error)}"
            ) from None

    def _sample(self, reply: VerlOutput) -> Sample:
        if reply.stop_reason == "aborted":
            raise ModelError(
                "server",
                f"{self.base_url}: verl aborted the request (its servers abort what is in "
                "flight to take new weights)",
            )
        if reply.log_probs is None:
            raise ModelError(
                "malformed",
                f"{self.base_url}: verl's server returned no log-probs; sprout needs the "
                "log-prob of each sampled token (the learner's importance ratio)",
            )
        ids = list(reply.token_ids)
        stopped = bool(ids) and ids[-1] == self.end_of_turn()
        return checked_sample(self.base_url, ids, list(reply.log_probs), stopped=stopped)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
