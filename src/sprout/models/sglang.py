"""`sglang/<model>`: SGLang's native `/generate`, token in, token out.

`/generate` takes `input_ids` and answers with each sampled token's id and
log-probability (`meta_info.output_token_logprobs`); it applies no chat
template to ids, so the template is applied here, once, by the model's own
tokenizer from a local folder (`[model] tokenizer`), as verl and slime do with
SGLang. One request samples one reply: `n` replies are `n` requests, seeded
`seed`, `seed + 1`, ... The context length is the `max_model_len` SGLang lists in
`/v1/models` (its `/get_model_info` names none).
"""

from __future__ import annotations

from typing import Any

from sprout.models.hf_tokenizer import HFTokenizer, LocalTemplate
from sprout.models.http_json import JsonServer
from sprout.models.token_server import (
    Generation,
    Sample,
    Sampling,
    checked_sample,
    served_window,
)
from sprout.models.types import ModelError
from sprout.models.window import ContextWindow


class SGLangServer(LocalTemplate):
    """A `TokenServer` over SGLang's `/generate`, with the model's tokenizer read locally."""

    kind = "SGLang"

    def __init__(self, http: JsonServer, tokenizer: HFTokenizer, model: str) -> None:
        self.http = http
        self.tokenizer = tokenizer
        self.model = model
        """The served model's name, as `/v1/models` lists it (`sglang/NAME`)."""
        self.base_url = http.base_url

    def context_window(self) -> ContextWindow | None:
        """`max_model_len` of the served model in `/v1/models`."""
        return served_window(self.http, self.model)

    def generate(self, sampling: Sampling) -> Generation:
        params: dict[str, Any] = {"skip_special_tokens": False}
        if sampling.temperature is not None:
            params["temperature"] = sampling.temperature
        if sampling.max_tokens is not None:
            params["max_new_tokens"] = sampling.max_tokens
        samples, cached = [], []
        for number in range(sampling.n):
            if sampling.seed is not None:
                params["sampling_seed"] = sampling.seed + number
            body = {
                "input_ids": list(sampling.prompt),
                "sampling_params": dict(params),
                "return_logprob": True,
                "top_logprobs_num": sampling.top_logprobs,
            }
            reply = self.http.post("/generate", body, prompt=sampling.prompt)
            meta = reply.get("meta_info")
            if not isinstance(meta, dict):
                raise ModelError("malformed", f"{self.base_url}/generate: no meta_info")
            samples.append(self._sample(reply, meta, sampling.top_logprobs))
            if isinstance(meta.get("cached_tokens"), int):
                cached.append(meta["cached_tokens"])
        return Generation(tuple(samples), cached[0] if cached else None)

    def _sample(self, reply: dict[str, Any], meta: dict[str, Any], top_logprobs: int) -> Sample:
        """One reply as a `Sample`: ids and log-probs from `output_token_logprobs` (one
        `[logprob, id, text]` per sampled token, the stop token included), checked against
        `output_ids` when the server sends them."""
        entries = meta.get("output_token_logprobs")
        if not isinstance(entries, list) or not all(
            isinstance(e, list | tuple) and len(e) >= 2 for e in entries
        ):
            raise ModelError(
                "malformed", f"{self.base_url}/generate: no output_token_logprobs in meta_info"
            )
        ids = [entry[1] for entry in entries]
        if isinstance(reply.get("output_ids"), list) and reply["output_ids"] != ids:
            raise ModelError(
                "malformed", f"{self.base_url}/generate: output_ids and the log-probs' ids differ"
            )
        finish = meta.get("finish_reason") or {}
        matched = finish.get("matched") if isinstance(finish, dict) else None
        stopped = isinstance(finish, dict) and finish.get("type") == "stop" and bool(ids)
        stopped = stopped and isinstance(matched, int) and ids[-1] == matched
        tops = meta.get("output_top_logprobs") or []
        top = [
            {str(alt[2] if len(alt) > 2 and alt[2] else alt[1]): float(alt[0]) for alt in row}
            for row in tops
        ]
        return checked_sample(
            self.base_url,
            ids,
            [entry[0] for entry in entries],
            stopped=stopped,
            top=top if top_logprobs else [],
        )
