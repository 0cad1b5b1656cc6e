"""A loopback server that speaks vLLM's and SGLang's token routes as they document them.

vLLM: `/tokenize` (a prompt, or chat messages through the template),
`/detokenize` and `/v1/completions` with a token-list prompt and
`return_token_ids`. SGLang: `/generate` with `input_ids`, answering with
`meta_info.output_token_logprobs` and `output_ids`, and
`/update_weights_from_disk` (`model_path`; each call kept in `loaded`, refused
with SGLang's `success: false` for a path in `unloadable`). Both: `/v1/models`, listing
the model with its `max_model_len` when one is set. llama.cpp's `/tokenize`
(`content`) and `/props`, for the rollout server's vocabulary check.
The tokenizer and chat
template are the tiny model's real ones (transformers), so
what the client renders, sends and stores can be checked against them. The
replies are scripted texts, returned as the ids they encode to plus the
end-of-turn token, as a server that sampled them would: a list, taken in order, or a
function of the prompt's text (a scripted model that reads what it was shown). Every prompt it was
sent is kept in `prompts`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.loopback import loopback


class FakeTokenServer:
    def __init__(self, tokenizer: Any, replies: list[str] | Callable[[str], str]) -> None:
        self.tokenizer = tokenizer
        self.replies = replies if callable(replies) else list(replies)
        self.prompts: list[list[int]] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.broken: str | None = None
        """When set, a sampling route leaves this field out of its reply."""
        self.loaded: list[str] = []
        self.unloadable: set[str] = set()
        self.max_model_len: int | None = None
        """The context length `/v1/models` lists; None: the route is not there (404)."""
        self.end = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self._added = {i: t.content for i, t in tokenizer.added_tokens_decoder.items()}
        longest_first = sorted(self._added.values(), key=len, reverse=True)
        self._at_added = re.compile("(" + "|".join(map(re.escape, longest_first)) + ")")
        self._encoded: dict[str, tuple[int, ...]] = {}
        self._decoded: dict[tuple[int, ...], str] = {}

    def encode(self, text: str) -> list[int]:
        """The tokenizer's ids of `text`, each piece between added tokens (`<|im_start|>`,
        ...) encoded once: the tokenizer splits a text there before anything else, and a
        long attempt sends its whole conversation again at every turn, which tokenized
        afresh made the long-attempt tests as slow as their sandboxes."""
        ids: list[int] = []
        for piece in self._at_added.split(text):
            if piece not in self._encoded:
                self._encoded[piece] = tuple(self.tokenizer.encode(piece, add_special_tokens=False))
            ids.extend(self._encoded[piece])
        return ids

    def answer(self, route: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append((route, body))
        if route == "/tokenize" and "content" in body:
            return 200, {"tokens": self.encode(body["content"])}
        if route == "/props":
            return 200, {"eos_token": "<|im_end|>", "model_path": "fake.gguf"}
        if route == "/v1/models" and self.max_model_len is not None:
            return 200, {"data": [{"id": "tiny", "max_model_len": self.max_model_len}]}
        if route == "/update_weights_from_disk":
            return self.update_weights(body["model_path"])
        if route == "/tokenize" and "messages" in body:
            text = self.tokenizer.apply_chat_template(
                body["messages"],
                tokenize=False,
                add_generation_prompt=body.get("add_generation_prompt", True),
            )
            return 200, {"tokens": self.encode(text), "count": 0, "max_model_len": 4096}
        if route == "/tokenize":
            return 200, {"tokens": self.encode(body["prompt"])}
        if route == "/detokenize":
            return 200, {"prompt": self.decode(body["tokens"])}
        if route == "/v1/completions":
            return 200, self.completions(body)
        if route == "/generate":
            return 200, self.generate(body)
        return 404, {"error": f"no route {route}"}

    def update_weights(self, path: str) -> tuple[int, dict[str, Any]]:
        if path in self.unloadable:
            return 400, {"success": False, "message": f"Failed to load {path}"}
        self.loaded.append(path)
        return 200, {"success": True, "message": "Succeeded to update model weights."}

    def decode(self, ids: list[int]) -> str:
        """The tokenizer's text of `ids` (special tokens kept), each run between added
        tokens decoded once: their text is theirs whatever stands around them."""
        text: list[str] = []
        run: list[int] = []
        for i in [*ids, None]:
            if i is not None and i not in self._added:
                run.append(i)
                continue
            if run:
                text.append(self._decoded_run(tuple(run)))
                run = []
            if i is not None:
                text.append(self._added[i])
        return "".join(text)

    def _decoded_run(self, ids: tuple[int, ...]) -> str:
        if ids not in self._decoded:
            self._decoded[ids] = str(
                self.tokenizer.decode(
                    list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False
                )
            )
        return self._decoded[ids]

    def sampled(self, prompt: list[int]) -> list[int]:
        """The next scripted reply to `prompt` as the ids a server samples: its tokens, then
        the stop."""
        replies = self.replies
        text = replies(self.decode(prompt)) if callable(replies) else replies.pop(0)
        return [*self.encode(text), self.end]

    def generate(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["input_ids"]
        assert isinstance(prompt, list) and body.get("return_logprob") is True
        self.prompts.append(prompt)
        ids = self.sampled(prompt)
        meta: dict[str, Any] = {
            "finish_reason": {"type": "stop", "matched": self.end},
            "prompt_tokens": len(prompt),
            "completion_tokens": len(ids),
            "cached_tokens": 0,
            "output_token_logprobs": [[-0.25, i, None] for i in ids],
            "output_top_logprobs": [[[-0.25, i, None]] for i in ids],
        }
        reply = {"text": "", "output_ids": ids, "meta_info": meta}
        if self.broken:
            meta.pop(self.broken, None)
        return reply

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["prompt"]
        assert isinstance(prompt, list), "the prompt must be sent as token ids"
        assert body.get("return_token_ids") is True
        self.prompts.append(prompt)
        choices = []
        for index in range(body.get("n", 1)):
            ids = self.sampled(prompt)
            pieces = self.tokenizer.convert_ids_to_tokens(ids)
            choice = {
                "index": index,
                "text": "",
                "token_ids": ids,
                "prompt_token_ids": prompt,
                "logprobs": {
                    "tokens": pieces,
                    "token_logprobs": [-0.25] * len(ids),
                    "top_logprobs": [{piece: -0.25} for piece in pieces],
                },
                "finish_reason": "stop",
                "stop_reason": None,
            }
            if self.broken:
                choice.pop(self.broken)
            choices.append(choice)
        return {
            "choices": choices,
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": 0},
        }


@contextmanager
def serving(fake: FakeTokenServer) -> Iterator[str]:
    """`fake` on a loopback port for the `with` block; yields its base URL."""

    def answer(method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        status, reply = fake.answer(path, json.loads(body) if body else {})
        return status, json.dumps(reply).encode()

    with loopback(answer) as url:
        yield url
