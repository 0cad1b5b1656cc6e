"""A `--model` string parsed once into a `ModelSpec`, then built into a client: one table of
the kinds of model, by prefix.

Each entry of `MODELS` both builds its client and names the client's class, whose
`capabilities` answer what a spec can do before any client is built
(`ModelSpec.capabilities`): the two can never disagree, and a new kind of model is one more
entry. A client's module is imported only when its entry is used: the openai package, say,
only for an `openai/` spec.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sprout.models.config import ModelConfig
from sprout.models.oracle import OracleModel, OracleNoiseModel, Step
from sprout.models.oracle_spec import NOISE_OPTIONS, parse_noise_spec, parse_oracle_spec
from sprout.models.types import Capabilities, Model, ModelError

if TYPE_CHECKING:
    from sprout.models.hf import HFModel
    from sprout.models.http_json import JsonServer
    from sprout.models.openai_client import OpenAIModel
    from sprout.models.token_server import TokenServer, TokenServerModel


@dataclass(frozen=True)
class ModelArgs:
    """What building a spec's client takes besides the spec (`ModelSpec.build`); each kind
    reads what it needs."""

    base_url: str | None = None
    api_key: str | None = None
    steps: Sequence[Step | str] | None = None
    hf_options: Mapping[str, Any] | None = None
    options: ModelConfig | None = None


@dataclass(frozen=True)
class ModelKind:
    """One kind of `--model` string."""

    form: str
    """How the error for an unknown spec lists it."""
    client: Callable[[], type[Model]]
    """The class its clients are, imported only now: its `capabilities` are the spec's."""
    build: Callable[[ModelSpec, ModelArgs], Model]
    """The client of a spec of this kind; ModelError ("bad_input") for one it cannot be."""
    options: bool = False
    """A bare name (no `/`) that may be followed by `:OPTIONS`."""
    loads: bool = False
    """Building it loads weights in-process: `sprout run` builds it as the run starts."""
    check: Callable[[str], object] | None = None
    """What the spec itself can get wrong, told as it is parsed (an oracle's options)."""


@dataclass(frozen=True)
class ModelSpec:
    """A `--model` string parsed once, where a run's settings are made: its kind (the entry
    of `MODELS`), what that kind declares, and the client it builds where one is needed.
    A run's settings store it as the string it was given (`text`); it holds plain strings
    only, so it pickles wherever the settings go."""

    text: str
    """The spec as given, e.g. ``openai/Qwen3-8B``: what the run's settings store."""
    prefix: str
    """Its kind's key in `MODELS`, e.g. ``openai/`` or ``oracle``."""

    @classmethod
    def parse(cls, text: str) -> ModelSpec:
        """The spec `text` names; ModelError ("bad_input") listing every form when no kind
        does, or saying what the spec itself gets wrong (an oracle's options)."""
        spec = cls(text, _prefix(text))
        if spec.kind.check is not None:
            spec.kind.check(text)
        return spec

    @property
    def kind(self) -> ModelKind:
        """Its entry of `MODELS`."""
        return MODELS[self.prefix]

    @property
    def name(self) -> str:
        """What follows a `/` kind's prefix (a model's name, a folder); "" for a bare name."""
        return self.text.partition("/")[2]

    @property
    def capabilities(self) -> Capabilities:
        """What the model can do, known before it is built (nothing is loaded or called):
        its client class's `capabilities`."""
        return self.kind.client().capabilities

    @property
    def loads(self) -> bool:
        """Whether building it loads weights in-process (an ``hf/`` folder)."""
        return self.kind.loads

    def build(self, args: ModelArgs) -> Model:
        """Its client; ModelError ("bad_input") for one `args` cannot make."""
        return self.kind.build(self, args)

    def __str__(self) -> str:
        return self.text


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
    `HFModel`'s keywords: device, dtype, max_new_tokens, top_logprobs, seed). Every kind
    takes `options.context_tokens` as its context window, whatever it would find itself.
    ``oracle[:think=..]`` and ``oracle-noise[:errors=..,p=..,q=..,seed=..]`` replay a task's
    reference solution, so they need its `steps` (`Step`s or plain command strings).
    """
    args = ModelArgs(base_url, api_key, steps, hf_options, options)
    return ModelSpec.parse(spec).build(args)


def _prefix(spec: str) -> str:
    """The key of the entry of `MODELS` that names `spec`: a prefix ending in `/` names every
    spec that starts with it, a bare name itself (and, with `options`, itself then
    `:OPTIONS`); ModelError listing every form when none does."""
    for prefix, kind in MODELS.items():
        if spec.startswith(prefix) if prefix.endswith("/") else spec == prefix:
            return prefix
        if kind.options and spec.startswith(f"{prefix}:"):
            return prefix
    forms = ", ".join(kind.form for kind in MODELS.values())
    raise ModelError("bad_input", f"--model {spec!r}: expected one of {forms}")


def _openai_client() -> type[OpenAIModel]:
    from sprout.models.openai_client import OpenAIModel

    return OpenAIModel


def _openai(spec: ModelSpec, args: ModelArgs) -> Model:
    return _openai_client()(
        spec.name, base_url=args.base_url, api_key=args.api_key, options=args.options
    )


def _hf_client() -> type[HFModel]:
    from sprout.models.hf import HFModel

    return HFModel


def _hf(spec: ModelSpec, args: ModelArgs) -> Model:
    path = spec.name
    if not path:
        raise ModelError("bad_input", f"--model {spec}: expected hf/<path to a model folder>")
    options = dict(args.hf_options or {})
    if args.options is not None and args.options.context_tokens is not None:
        options["context_tokens"] = args.options.context_tokens
    return _hf_client()(path, **options)


def _oracle(spec: ModelSpec, args: ModelArgs) -> Model:
    think_s = parse_oracle_spec(spec.text)
    return OracleModel(_solution_steps(spec, args), think_s=think_s)


def _oracle_noise(spec: ModelSpec, args: ModelArgs) -> Model:
    noise = parse_noise_spec(spec.text)
    return OracleNoiseModel(_solution_steps(spec, args), noise=noise)


def _solution_steps(spec: ModelSpec, args: ModelArgs) -> Sequence[Step | str]:
    if args.steps is None:
        raise ModelError("bad_input", f"--model {spec}: needs a task's reference solution (steps)")
    return args.steps


def _token_server_client() -> type[TokenServerModel]:
    from sprout.models.token_server import TokenServerModel

    return TokenServerModel


def _verl(spec: ModelSpec, args: ModelArgs) -> Model:
    raise ModelError(
        "bad_input",
        f"--model {spec}: a verl/ model is verl's own servers, reached only from inside verl's "
        "`sprout` agent loop (docs/integrations.md); from the command line use vllm/, "
        "sglang/ or llamacpp/ with --base-url",
    )


ServerMaker = Callable[["JsonServer", str, str, ModelConfig], "TokenServer"]
"""(the server's HTTP client, the model's name, the spec, the `[model]` table) -> the
server's token-in, token-out protocol."""


def _token_server(make_server: ServerMaker) -> Callable[[ModelSpec, ModelArgs], Model]:
    """The builder of a `TokenServerModel` for a ``vllm/``, ``sglang/`` or ``llamacpp/``
    spec, the server's own part made by `make_server`."""

    def build(spec: ModelSpec, args: ModelArgs) -> Model:
        from sprout.models.http_json import JsonServer
        from sprout.models.servers import split_urls

        options = args.options or ModelConfig()
        kind, name = spec.text.partition("/")[0], spec.name
        if not name:
            raise ModelError("bad_input", f"--model {spec}: expected {kind}/<model name>")
        if not args.base_url:
            raise ModelError(
                "bad_input",
                f"--model {spec}: needs --base-url, the server's address (http://HOST:PORT, "
                "or several separated by commas)",
            )
        http = JsonServer(
            ",".join(url.removesuffix("/v1") for url in split_urls(args.base_url)),
            timeout_s=options.timeout_s,
            retries=options.max_retries,
            api_key=args.api_key,
        )
        server = make_server(http, name, spec.text, options)
        return _token_server_client()(
            spec.text, server, max_tokens=options.max_tokens, context_tokens=options.context_tokens
        )

    return build


def _vllm(http: JsonServer, name: str, spec: str, options: ModelConfig) -> TokenServer:
    from sprout.models.vllm import VLLMServer

    return VLLMServer(http, name)


def _sglang(http: JsonServer, name: str, spec: str, options: ModelConfig) -> TokenServer:
    from pathlib import Path

    from sprout.models.hf_tokenizer import HFTokenizer
    from sprout.models.sglang import SGLangServer

    if not options.tokenizer:
        raise ModelError(
            "bad_input",
            f"--model {spec}: SGLang's /generate takes token ids; name the model's local "
            "folder (its tokenizer and chat template) as tokenizer in the [model] table",
        )
    return SGLangServer(http, HFTokenizer(Path(options.tokenizer), spec), name)


def _llamacpp(http: JsonServer, name: str, spec: str, options: ModelConfig) -> TokenServer:
    from sprout.models.llamacpp import LlamaCppServer

    return LlamaCppServer(http)


MODELS: dict[str, ModelKind] = {
    "openai/": ModelKind("openai/<name>", _openai_client, _openai),
    "vllm/": ModelKind("vllm/<name>", _token_server_client, _token_server(_vllm)),
    "sglang/": ModelKind("sglang/<name>", _token_server_client, _token_server(_sglang)),
    "llamacpp/": ModelKind("llamacpp/<name>", _token_server_client, _token_server(_llamacpp)),
    "hf/": ModelKind("hf/<path>", _hf_client, _hf, loads=True),
    "verl/": ModelKind("verl/<name> (inside verl's agent loop)", _token_server_client, _verl),
    "oracle": ModelKind(
        "oracle[:think=SECONDS]",
        lambda: OracleModel,
        _oracle,
        options=True,
        check=parse_oracle_spec,
    ),
    "oracle-noise": ModelKind(
        f"oracle-noise[:{NOISE_OPTIONS}]",
        lambda: OracleNoiseModel,
        _oracle_noise,
        options=True,
        check=parse_noise_spec,
    ),
}
"""Every kind of `--model` string, by prefix, in the order the error for an unknown one
lists them."""
