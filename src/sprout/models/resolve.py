"""Turning a `--model` string into a client: one small mapping of prefixes."""

from __future__ import annotations

from collections.abc import Sequence

from sprout.models.oracle import OracleModel, OracleNoiseModel, Step, parse_noise_spec
from sprout.models.types import Model, ModelError

PREFIXES = ("openai/", "oracle-noise", "oracle")
FORMS = ("openai/<name>", "oracle", "oracle-noise[:p=<0..1>,seed=<int>]")
"""What `--model` accepts, as the error for an unknown one lists it."""


def resolve_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    steps: Sequence[Step | str] | None = None,
) -> Model:
    """The client for `spec`, e.g. ``openai/Qwen3-8B`` (with `base_url` or OPENAI_BASE_URL).

    ``oracle`` and ``oracle-noise[:p=..,seed=..]`` replay a task's reference
    solution, so they need its `steps` (`Step`s or plain command strings).
    """
    if spec.startswith("openai/"):
        from sprout.models.openai_client import OpenAIModel

        return OpenAIModel(spec.removeprefix("openai/"), base_url=base_url, api_key=api_key)
    if spec == "oracle" or spec == "oracle-noise" or spec.startswith("oracle-noise:"):
        noise = None if spec == "oracle" else parse_noise_spec(spec)
        if steps is None:
            raise ModelError(
                "bad_input", f"--model {spec}: needs a task's reference solution (steps)"
            )
        if noise is None:
            return OracleModel(steps)
        p, seed = noise
        return OracleNoiseModel(steps, p=p, seed=seed)
    raise ModelError("bad_input", f"--model {spec!r}: expected one of {', '.join(FORMS)}")
