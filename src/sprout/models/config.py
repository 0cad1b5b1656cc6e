"""The `[model]` table of a run's settings file: how a model server is called, and the model's
context window when its client cannot find it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sprout.config import read_table


class ModelConfig(BaseModel):
    """Per-request settings of a model server; the actor's sampling (temperature,
    log-probs) lives in `[actor]`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(600.0, gt=0)
    """Seconds one request may take before it is retried (a long reasoning reply needs many)."""
    max_retries: int = Field(2, ge=0)
    """Retries of a request that timed out or got 429, 5xx or no connection (with backoff)."""
    max_tokens: int | None = Field(None, ge=1)
    """Tokens one reply may have; None leaves it to the server (which may fill its context)."""
    context_tokens: int | None = Field(None, ge=1)
    """The model's context length in tokens, prompt and reply together, for a client that
    cannot find it (an `openai/` server) or finds one that is wrong; None: what the client
    finds (`hf/` config.json, llama.cpp's /props, vLLM's and SGLang's /v1/models), or no
    known window. The roles' prompts are built to fit it, and the actor's
    `max_context_tokens` defaults to it."""
    tokenizer: str | None = None
    """A local Hugging Face model folder whose tokenizer and chat template render the prompts
    of a server that takes only token ids (`sglang/`); the server's own model's tokenizer."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Fields added to every request as they are, e.g. `{chat_template_kwargs =
    {enable_thinking = false}}` to turn a model's thinking off on vLLM or SGLang."""

    @classmethod
    def from_file(cls, path: str | Path) -> ModelConfig:
        """Read the `[model]` table of a TOML file; errors name the file and the field."""
        return read_table(path, "model", cls)
