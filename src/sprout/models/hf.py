"""`hf/<path>`: a local Hugging Face causal LM whose token ids a learner can train on.

Generation uses the tokenizer's chat template and a plain sampling loop
(temperature only; greedy at 0), and returns the prompt ids, each reply's ids
and the log-probabilities of the sampled tokens under the model itself
(temperature 1, as a learner recomputes them). Token counts are real. How a
context becomes ids, exactly, is the tokenizer half's (`sprout.models.hf_tokenizer`).
The context window is config.json's `max_position_embeddings` (or `context_tokens`,
`[model] context_tokens`): a prompt over it is refused, and a reply stops where it ends.

torch and transformers are imported when a model is loaded, never at import.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sprout.models.hf_tokenizer import HFTokenizer, first_line
from sprout.models.types import (
    Capabilities,
    Choice,
    Completion,
    Message,
    ModelError,
    TokenLogprob,
)
from sprout.models.window import OVERRIDE, ContextWindow

DTYPES = ("auto", "float32", "bfloat16", "float16")


class HFModel(HFTokenizer):
    """A causal LM folder (config, weights, tokenizer with a chat template), loaded in-process.

    `module` is the torch model itself: a learner in the same process may
    update its weights in place, and the next `complete` samples from them.
    Tool calls are not supported (use the default ``bash_blocks`` call format).
    """

    capabilities = Capabilities(token_ids=True, logprobs=True)

    def __init__(
        self,
        path: str | Path,
        *,
        device: str = "cpu",
        dtype: str = "auto",
        max_new_tokens: int = 1024,
        top_logprobs: int = 5,
        seed: int | None = None,
        context_tokens: int | None = None,
    ) -> None:
        """Load the model at `path`.

        `device`: ``cpu`` (default), ``cuda``, ``cuda:N`` or ``auto`` (cuda when
        available). `dtype`: ``auto`` (bfloat16 on a GPU that supports it, else
        float32), ``float32``, ``bfloat16`` or ``float16``. `max_new_tokens`
        caps each reply; `top_logprobs` alternatives per token come back when
        log-probs are asked (for the entropy schedule); `seed` makes sampling
        reproducible; `context_tokens` replaces the window config.json gives.
        """
        name = f"hf/{path}"
        if max_new_tokens < 1:
            raise ModelError("bad_input", f"{name}: max_new_tokens must be at least 1")
        if dtype not in DTYPES:
            raise ModelError(
                "bad_input", f"{name}: dtype {dtype!r}: expected one of {', '.join(DTYPES)}"
            )
        super().__init__(Path(path).expanduser(), name)
        self.max_new_tokens = max_new_tokens
        self.top_logprobs = top_logprobs
        self.context_tokens = context_tokens

        import torch

        self.device = _device(device, self.name)
        self.dtype = _dtype(dtype, self.device)
        self.module = self._load_module(self.path)
        self.stop_ids = self._stop_ids()
        """Tokens that end a reply: the end-of-turn token, EOS, the generation config's EOS."""
        forward = inspect.signature(self.module.forward).parameters
        self._cache_argument = "cache" if "cache" in forward else "past_key_values"
        self._generator = torch.Generator(device=self.device)
        if seed is None:
            self._generator.seed()
        else:
            self._generator.manual_seed(seed)

    # weights

    def _load_module(self, path: Path) -> Any:
        from transformers import AutoModelForCausalLM

        if not (path / "config.json").is_file():
            raise ModelError("bad_input", f"{self.name}: {path} has no config.json")
        try:
            module: Any = AutoModelForCausalLM.from_pretrained(
                path, dtype=self.dtype, local_files_only=True
            )
        except (OSError, ValueError, KeyError) as error:
            raise ModelError(
                "bad_input", f"{self.name}: cannot load the weights in {path}: {first_line(error)}"
            ) from None
        return module.to(self.device).eval()

    def reload(self, path: str | Path | None = None) -> None:
        """Read the weights saved at `path` (default: this model's folder) into `module`.

        The module object stays the same, so whoever holds it sees the new weights.
        """
        fresh = self._load_module(Path(path).expanduser() if path is not None else self.path)
        self.load_state(fresh.state_dict())

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Copy a state dict (e.g. a learner's) into `module`'s weights."""
        with self._lock:
            self.module.load_state_dict(state)

    def context_window(self) -> ContextWindow | None:
        """`context_tokens` when set, else config.json's `max_position_embeddings`; replies
        are `max_new_tokens` long at most."""
        if self.context_tokens is not None:
            return ContextWindow(self.context_tokens, OVERRIDE, self.max_new_tokens)
        limit = getattr(self.module.config, "max_position_embeddings", None)
        if not isinstance(limit, int) or limit < 1:
            return None
        source = f"{self.path / 'config.json'} max_position_embeddings"
        return ContextWindow(limit, source, self.max_new_tokens)

    def _stop_ids(self) -> frozenset[int]:
        stops = {self.end_of_turn_id}
        if self.tokenizer.eos_token_id is not None:
            stops.add(int(self.tokenizer.eos_token_id))
        config = getattr(self.module, "generation_config", None)
        found = getattr(config, "eos_token_id", None)
        stops.update(
            int(i) for i in (found if isinstance(found, list) else [found]) if i is not None
        )
        return frozenset(stops)

    # generation

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
        """Sample `n` replies to `messages` (after the stored `prefix_ids`, when given); with
        `seed`, the same seed and prompt sample the same replies."""
        if tools:
            raise ModelError(
                "bad_input",
                f"{self.name}: tool calls are not supported by local models; use the "
                "bash_blocks call format",
            )
        if n < 1:
            raise ModelError("bad_input", f"{self.name}: n must be at least 1, got {n}")
        temperature = 1.0 if temperature is None else float(temperature)
        if temperature < 0:
            raise ModelError("bad_input", f"{self.name}: temperature must be >= 0")
        started = time.monotonic()
        prefix = tuple(int(i) for i in prefix_ids or ())
        with self._lock:
            if seed is not None:
                self._generator.manual_seed(seed)
            prompt = prefix + self.context_ids(messages, prefix)
            rows = self._generate(prompt, n, temperature, logprobs)
            choices = tuple(self._choice(*row, logprobs=logprobs) for row in rows)
        return Completion(
            choices,
            prompt_tokens=len(prompt),
            completion_tokens=sum(len(choice.completion_ids or ()) for choice in choices),
            latency_s=time.monotonic() - started,
            prompt_ids=prompt,
        )

    def _generate(
        self, prompt: tuple[int, ...], n: int, temperature: float, logprobs: bool
    ) -> list[tuple[list[int], list[float], list[dict[int, float]]]]:
        """(ids, log-probs, top alternatives) of `n` replies, sampled with a KV cache."""
        import torch

        window = self.context_window()
        budget = self.max_new_tokens
        if window is not None:
            if len(prompt) >= window.tokens:
                raise ModelError(
                    "context",
                    f"{self.name}: the prompt has {len(prompt)} tokens, more than "
                    f"{window.describe()}",
                )
            budget = min(budget, window.tokens - len(prompt))
        rows: list[tuple[list[int], list[float], list[dict[int, float]]]] = [
            ([], [], []) for _ in range(n)
        ]
        done = [False] * n
        training = self.module.training
        self.module.eval()
        try:
            with torch.no_grad():
                logits, cache = self._forward(torch.tensor([list(prompt)] * n, device=self.device))
                for _ in range(budget):
                    logp = torch.log_softmax(logits, dim=-1)
                    if temperature == 0:
                        chosen = logp.argmax(dim=-1)
                    else:
                        probs = torch.softmax(logits / temperature, dim=-1)
                        chosen = torch.multinomial(probs, 1, generator=self._generator)[:, 0]
                    picked = logp.gather(-1, chosen[:, None])[:, 0].tolist()
                    top = (
                        logp.topk(min(self.top_logprobs, logp.shape[-1]), dim=-1)
                        if logprobs
                        else None
                    )
                    for row, token in enumerate(chosen.tolist()):
                        if done[row]:
                            continue
                        ids, lps, tops = rows[row]
                        ids.append(token)
                        lps.append(picked[row])
                        if top is not None:
                            indices, values = top.indices[row].tolist(), top.values[row].tolist()
                            tops.append(dict(zip(indices, values, strict=True)))
                        done[row] = token in self.stop_ids
                    if all(done):
                        break
                    logits, cache = self._forward(chosen[:, None], cache)
        finally:
            self.module.train(training)
        return rows

    def _forward(self, input_ids: Any, cache: Any = None) -> tuple[Any, Any]:
        """The next-token logits (float32) after `input_ids`, and the KV cache to pass back."""
        kwargs = {} if cache is None else {self._cache_argument: cache}
        output = self.module(input_ids=input_ids, use_cache=True, **kwargs)
        cache = getattr(output, "cache", None)
        if cache is None:  # transformers before 5.x names it past_key_values
            cache = getattr(output, "past_key_values", None)
        return output.logits[:, -1, :].float(), cache

    def _choice(
        self, ids: list[int], lps: list[float], tops: list[dict[int, float]], *, logprobs: bool
    ) -> Choice:
        stopped = bool(ids) and ids[-1] in self.stop_ids
        text = self.decode(ids[:-1] if stopped else ids)
        tokens = None
        if logprobs:
            names = self.tokenizer.convert_ids_to_tokens(ids)
            tokens = tuple(
                TokenLogprob(
                    str(name),
                    lp,
                    {str(self.tokenizer.convert_ids_to_tokens(i)): v for i, v in top.items()},
                )
                for name, lp, top in zip(names, lps, tops, strict=True)
            )
        return Choice(text, "stop" if stopped else "length", (), tokens, tuple(ids))


def _device(device: str, name: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelError("bad_input", f"{name}: device {device!r}: no CUDA device is available")
    return device


def _dtype(dtype: str, device: str) -> Any:
    import torch

    if dtype == "auto":
        if device.startswith("cuda") and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    return getattr(torch, dtype)
