"""Turning a `--model` string into a client: one small mapping of prefixes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sprout.models.config import ModelConfig
from sprout.models.oracle import (
    NOISE_OPTIONS,
    OracleModel,
    OracleNoiseModel,
    Step,
    parse_noise_spec,
)
from sprout.models.types import Capabilities, Model, ModelError

PREFIXES = ("openai/", "vllm/", "sglang/", "llamacpp/", "hf/", "oracle-noise", "oracle")
FORMS = (
    "openai/<name>",
    "vllm/<name>",
    "sglang/<name>",
    "llamacpp/<name>",
    "hf/<path>",
    "oracle",
    f"oracle-noise[:{NOISE_OPTIONS}]",
)
TOKEN_SERVERS = ("vllm/", "sglang/", "llamacpp/")
"""Servers sampled from token ids, whose rollouts are token-exact (`TokenServerModel`)."""
"""What `--model` accepts, as the error for an unknown one lists it."""


def resolve_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    steps: Sequence[Step | str] | None = None,
    hf_options: Mapping[str, Any] | None = None,
    options: ModelConfig | None = None,
) -> Model:
    """The client for `spec`, e.g. ``openai/Qwen3-8B`` (with `base_url` or OPENAI_BASE_URL).

    `options` (the `[model]` table) sets how an ``openai/`` server is called.
    ``vllm/NAME``, ``sglang/NAME`` and ``llamacpp/NAME`` are servers at `base_url` sampled
    from token ids (token-exact rollouts, see `models.token_server`); ``sglang/`` renders
    prompts with the local tokenizer `options.tokenizer` names.
    ``hf/PATH`` loads the local model folder PATH in-process (`hf_options`:
    `HFModel`'s keywords: device, dtype, max_new_tokens, top_logprobs, seed).
    ``oracle`` and ``oracle-noise[:errors=..,p=..,q=..,seed=..]`` replay a task's reference
    solution, so they need its `steps` (`Step`s or plain command strings).
    """
    if spec.startswith("openai/"):
        from sprout.models.openai_client import OpenAIModel

        return OpenAIModel(
            spec.removeprefix("openai/"), base_url=base_url, api_key=api_key, options=options
        )
    if spec.startswith(TOKEN_SERVERS):
        return _token_server(spec, base_url, api_key, options or ModelConfig())
    if spec.startswith("hf/"):
        path = spec.removeprefix("hf/")
        if not path:
            raise ModelError("bad_input", f"--model {spec}: expected hf/<path to a model folder>")
        from sprout.models.hf import HFModel

        return HFModel(path, **dict(hf_options or {}))
    if _names_oracle(spec):
        noise = None if spec == "oracle" else parse_noise_spec(spec)
        if steps is None:
            raise ModelError(
                "bad_input", f"--model {spec}: needs a task's reference solution (steps)"
            )
        if noise is None:
            return OracleModel(steps)
        return OracleNoiseModel(steps, noise=noise)
    raise ModelError("bad_input", f"--model {spec!r}: expected one of {', '.join(FORMS)}")


def spec_capabilities(spec: str) -> Capabilities:
    """What the model `spec` names can do, known before it is built (nothing is loaded or
    called): its client class's `capabilities`."""
    if spec.startswith("openai/"):
        from sprout.models.openai_client import OpenAIModel

        return OpenAIModel.capabilities
    if spec.startswith(TOKEN_SERVERS):
        from sprout.models.token_server import TokenServerModel

        return TokenServerModel.capabilities
    if spec.startswith("hf/"):
        from sprout.models.hf import HFModel

        return HFModel.capabilities
    if _names_oracle(spec):
        return OracleNoiseModel.capabilities if spec != "oracle" else OracleModel.capabilities
    raise ModelError("bad_input", f"--model {spec!r}: expected one of {', '.join(FORMS)}")


def _names_oracle(spec: str) -> bool:
    return spec == "oracle" or spec == "oracle-noise" or spec.startswith("oracle-noise:")


def _token_server(
    spec: str, base_url: str | None, api_key: str | None, options: ModelConfig
) -> Model:
    """The `TokenServerModel` of a ``vllm/``, ``sglang/`` or ``llamacpp/`` spec."""
    from sprout.models.http_json import JsonServer
    from sprout.models.token_server import TokenServer, TokenServerModel

    kind, _, name = spec.partition("/")
    if not name:
        raise ModelError("bad_input", f"--model {spec}: expected {kind}/<model name>")
    if not base_url:
        raise ModelError(
            "bad_input",
            f"--model {spec}: needs --base-url, the server's address (http://HOST:PORT, "
            "or several separated by commas)",
        )
    from sprout.models.servers import split_urls

    http = JsonServer(
        ",".join(url.removesuffix("/v1") for url in split_urls(base_url)),
        timeout_s=options.timeout_s,
        retries=options.max_retries,
        api_key=api_key,
    )
    server: TokenServer
    if kind == "vllm":
        from sprout.models.vllm import VLLMServer

        server = VLLMServer(http, name)
    elif kind == "sglang":
        from pathlib import Path

        from sprout.models.hf_tokenizer import HFTokenizer
        from sprout.models.sglang import SGLangServer

        if not options.tokenizer:
            raise ModelError(
                "bad_input",
                f"--model {spec}: SGLang's /generate takes token ids; name the model's local "
                "folder (its tokenizer and chat template) as tokenizer in the [model] table",
            )
        server = SGLangServer(http, HFTokenizer(Path(options.tokenizer), spec))
    else:
        from sprout.models.llamacpp import LlamaCppServer

        server = LlamaCppServer(http)
    return TokenServerModel(spec, server, max_tokens=options.max_tokens)
