"""Turning a `--model` string into a client: one small mapping of prefixes."""

from __future__ import annotations

from sprout.models.types import Model, ModelError

PREFIXES = ("openai/",)


def resolve_model(spec: str, *, base_url: str | None = None, api_key: str | None = None) -> Model:
    """The client for `spec`, e.g. ``openai/Qwen3-8B`` (with `base_url` or OPENAI_BASE_URL)."""
    if spec.startswith("openai/"):
        from sprout.models.openai_client import OpenAIModel

        return OpenAIModel(spec.removeprefix("openai/"), base_url=base_url, api_key=api_key)
    raise ModelError("bad_input", f"--model {spec!r}: expected one of {', '.join(PREFIXES)}<name>")
