"""Models say what they can do; a `--model` string says it before any model is built."""

from __future__ import annotations

import re

import pytest

from sprout.models import CHAT, Capabilities, ModelError, capabilities, token_model
from sprout.models.config import ModelConfig
from sprout.models.oracle import OracleModel, OracleNoiseModel
from sprout.models.resolve import MODELS, ModelSpec, resolve_model


@pytest.mark.parametrize("spec", ["oracle", "oracle-noise", "oracle-noise:p=0.5,seed=2"])
def test_the_oracles_replay_the_solution_and_write_no_role_output(spec: str):
    model = resolve_model(spec, steps=["true"])
    assert isinstance(model, OracleModel | OracleNoiseModel)
    assert capabilities(model) == ModelSpec.parse(spec).capabilities
    assert capabilities(model) == Capabilities(
        token_ids=False, logprobs=False, structured_output=False, replays_solution=True
    )
    assert token_model(model) is None


def test_an_openai_model_writes_role_output_and_can_return_logprobs():
    model = resolve_model(
        "openai/m", base_url="http://127.0.0.1:9/v1", api_key="k", options=ModelConfig()
    )
    assert capabilities(model) == ModelSpec.parse("openai/m").capabilities
    found = capabilities(model)
    assert found.logprobs and found.structured_output
    assert not found.token_ids and not found.replays_solution
    assert token_model(model) is None


def test_a_local_model_keeps_token_ids_known_before_it_loads():
    """`hf/PATH` is not loaded (no weights here): its class says what it can do."""
    found = ModelSpec.parse("hf/nowhere").capabilities
    assert found.token_ids and found.logprobs and found.structured_output
    assert not found.replays_solution


def test_a_model_that_declares_nothing_is_a_plain_chat_model():
    class Plain:
        name = "plain"

    assert capabilities(Plain()) == CHAT
    assert CHAT.structured_output and not (CHAT.logprobs or CHAT.token_ids)
    assert token_model(Plain()) is None  # type: ignore[arg-type]


def test_an_unknown_spec_has_no_capabilities():
    with pytest.raises(ModelError, match=r"'gpt-4'.*openai/<name>"):
        ModelSpec.parse("gpt-4")


BUILT_ELSEWHERE = {
    "hf/": "hf/m: m is not a folder",
    "sglang/": "as tokenizer in the [model] table",
    "verl/": "reached only from inside verl's `sprout` agent loop",
}
"""Kinds whose client cannot be built here: without a model folder, or outside verl's agent
loop (which builds it on verl's servers); their own builder says what is missing (`hf/<path>`
is tried for real in tests/train, `verl/` in tests/integrations/verl)."""


@pytest.mark.parametrize("prefix", list(MODELS))
def test_every_kind_of_model_builds_its_client_and_answers_its_capabilities(prefix: str):
    """One entry per kind answers both: the client `resolve_model` builds is of the class
    whose capabilities `ModelSpec.capabilities` gives, before anything is built."""
    kind = MODELS[prefix]
    spec = f"{prefix}m" if prefix.endswith("/") else prefix
    assert ModelSpec.parse(spec).kind is kind
    assert ModelSpec.parse(spec).capabilities == kind.client().capabilities
    given = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", "steps": ["true"]}
    if prefix in BUILT_ELSEWHERE:
        with pytest.raises(ModelError, match=re.escape(BUILT_ELSEWHERE[prefix])):
            resolve_model(spec, **given)
        return
    model = resolve_model(spec, **given)
    assert isinstance(model, kind.client())
    assert capabilities(model) == ModelSpec.parse(spec).capabilities


@pytest.mark.parametrize("spec", ["openai", "vllm", "oracles", "oracle-noisy", "hf"])
def test_a_spec_only_like_a_kind_is_none(spec: str):
    with pytest.raises(ModelError, match=r"expected one of openai/<name>, vllm/<name>"):
        ModelSpec.parse(spec)
