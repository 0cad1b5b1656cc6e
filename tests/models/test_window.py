"""A model's context window: found where each kind of model says it, overridden by
`[model] context_tokens`, and prompts counted by the model's own tokenizer where it has one.

The servers are real loopback HTTP servers answering in llama.cpp's, vLLM's and SGLang's
shapes; the local model is the tiny one, loaded for real.
"""

from __future__ import annotations

import json

import pytest

from sprout.models import ModelError
from sprout.models.config import ModelConfig
from sprout.models.estimate import estimate_tokens
from sprout.models.resolve import resolve_model
from sprout.models.window import ContextWindow, context_window, prompt_tokens
from tests.support.fake_token_server import FakeTokenServer, serving
from tests.support.loopback import loopback
from tests.support.scripted_model import ScriptedModel

MESSAGES = [{"role": "user", "content": "Fix the failing test in src/calc.py."}]
LONG = [{"role": "user", "content": "ls -la && cat README.md " * 200}]


def answering(routes: dict[str, object]):
    """(a loopback server answering each of `routes` with its JSON and 404 elsewhere, the
    paths it was asked)."""
    asked: list[str] = []

    def answer(method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        asked.append(path)
        if path in routes:
            return 200, json.dumps(routes[path]).encode()
        return 404, b'{"error": "no such route"}'

    return loopback(answer), asked


def test_llamacpp_reads_one_slots_context_from_props():
    props = {"default_generation_settings": {"n_ctx": 2048, "params": {}}, "total_slots": 4}
    server, _ = answering({"/props": props})
    with server as url:
        window = context_window(resolve_model("llamacpp/m", base_url=url))
    assert window == ContextWindow(2048, f"{url}/props n_ctx")


def test_vllm_reads_its_models_max_model_len():
    cards = {
        "object": "list",
        "data": [
            {"id": "other", "max_model_len": 1024},
            {"id": "qwen", "max_model_len": 32768},
        ],
    }
    server, _ = answering({"/v1/models": cards})
    with server as url:
        window = context_window(resolve_model("vllm/qwen", base_url=f"{url}/v1"))
    assert window == ContextWindow(32768, f"{url}/v1/models max_model_len")


def test_sglang_reads_the_max_model_len_it_lists(tiny_model_path):
    cards = {"object": "list", "data": [{"id": "served-name", "max_model_len": 8192}]}
    server, _ = answering({"/v1/models": cards})
    options = ModelConfig(tokenizer=str(tiny_model_path), max_tokens=256)
    with server as url:
        window = context_window(resolve_model("sglang/tiny", base_url=url, options=options))
    assert window == ContextWindow(8192, f"{url}/v1/models max_model_len", reply_tokens=256)


def test_a_server_that_says_none_has_no_window_and_is_asked_once():
    server, asked = answering({"/props": {"eos_token": "<|im_end|>"}})
    with server as url:
        model = resolve_model("vllm/m", base_url=url, options=ModelConfig(max_retries=0))
        assert context_window(model) is None
        assert context_window(model) is None
        llama = resolve_model("llamacpp/m", base_url=url)
        assert context_window(llama) is None
    assert asked.count("/v1/models") == 1


def test_the_model_table_overrides_what_a_server_reports_without_asking_it():
    server, asked = answering({"/v1/models": {"data": [{"id": "m", "max_model_len": 9}]}})
    options = ModelConfig(context_tokens=6000, max_tokens=500)
    with server as url:
        window = context_window(resolve_model("vllm/m", base_url=url, options=options))
    assert window == ContextWindow(6000, "[model] context_tokens", reply_tokens=500)
    assert asked == []


def test_an_openai_server_has_a_window_only_when_the_table_sets_one():
    bare = resolve_model("openai/m", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert context_window(bare) is None
    options = ModelConfig(context_tokens=4096)
    model = resolve_model("openai/m", base_url="http://127.0.0.1:9/v1", options=options)
    assert context_window(model) == ContextWindow(4096, "[model] context_tokens")
    count, exact = prompt_tokens(model, MESSAGES)
    assert not exact and count == estimate_tokens(MESSAGES[0]["content"]) + 8


def test_a_model_that_declares_nothing_has_no_window():
    assert context_window(ScriptedModel([])) is None
    assert prompt_tokens(ScriptedModel([]), MESSAGES)[1] is False


def test_a_token_server_refuses_a_prompt_over_its_window_before_sending_it(tokenizer):
    fake = FakeTokenServer(tokenizer, ["ls"])
    fake.max_model_len = 64
    with serving(fake) as url:
        model = resolve_model("vllm/tiny", base_url=url, options=ModelConfig(max_retries=0))
        count, exact = prompt_tokens(model, LONG)
        assert exact and count == len(model.context_ids(LONG, ()))
        with pytest.raises(ModelError, match=r"more than the model's context of 64") as refused:
            model.complete(LONG)
    assert refused.value.kind == "context"
    assert [route for route, _ in fake.requests if route == "/v1/completions"] == []


def test_a_token_servers_reply_is_cut_to_what_the_window_leaves(tokenizer):
    fake = FakeTokenServer(tokenizer, ["ls"])
    fake.max_model_len = 200
    with serving(fake) as url:
        options = ModelConfig(max_retries=0, max_tokens=1000)
        completion = resolve_model("vllm/tiny", base_url=url, options=options).complete(MESSAGES)
    [body] = [body for route, body in fake.requests if route == "/v1/completions"]
    assert body["max_tokens"] == 200 - completion.prompt_tokens


def test_a_local_model_reads_its_config_and_counts_with_its_tokenizer(tiny_model_path):
    model = resolve_model(f"hf/{tiny_model_path}", hf_options={"max_new_tokens": 8})
    window = context_window(model)
    assert window == ContextWindow(
        4096, f"{tiny_model_path / 'config.json'} max_position_embeddings", reply_tokens=8
    )
    count, exact = prompt_tokens(model, MESSAGES)
    assert exact and count == model.complete(MESSAGES).prompt_tokens


def test_a_local_models_window_is_the_tables_when_set(tiny_model_path):
    model = resolve_model(f"hf/{tiny_model_path}", options=ModelConfig(context_tokens=64))
    assert context_window(model) == ContextWindow(64, "[model] context_tokens", 1024)
    with pytest.raises(ModelError, match=r"context of 64 tokens \(\[model\] context_tokens\)"):
        model.complete(LONG)


@pytest.fixture
def tokenizer(tiny_model_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_path)
