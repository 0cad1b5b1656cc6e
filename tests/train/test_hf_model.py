"""`hf/PATH`: generation with ids, log-probs and real usage; bad folders; weights in place."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

import pytest

from sprout.models import ModelError, token_model
from sprout.models.resolve import resolve_model

MESSAGES = [
    {"role": "system", "content": "You fix bugs."},
    {"role": "user", "content": "Fix the failing test in src/calc.py."},
]


@pytest.fixture
def model(tiny_model_path):
    from sprout.models.hf import HFModel

    return HFModel(tiny_model_path, max_new_tokens=16, seed=0)


def test_a_reply_comes_with_its_ids_log_probs_and_real_usage(model):
    import torch

    completion = model.complete(MESSAGES, n=2, temperature=1.0, logprobs=True)

    rendered = model.tokenizer.apply_chat_template(
        MESSAGES, tokenize=False, add_generation_prompt=True
    )
    assert completion.prompt_ids == tuple(model.encode(rendered))
    assert completion.prompt_tokens == len(completion.prompt_ids)
    assert not completion.estimated
    assert completion.completion_tokens == sum(len(c.completion_ids) for c in completion.choices)
    for choice in completion.choices:
        ids = choice.completion_ids
        assert 1 <= len(ids) <= 16
        assert len(choice.logprobs) == len(ids)
        stopped = ids[-1] in model.stop_ids
        assert choice.finish_reason == ("stop" if stopped else "length")
        assert choice.text == model.decode(ids[:-1] if stopped else ids)
        for token in choice.logprobs:
            assert token.logprob <= 0
            assert 1 <= len(token.top) <= 5
            assert token.entropy() >= 0
        # the log-probs are the model's own (temperature 1): a teacher-forced pass agrees
        sequence = torch.tensor([list(completion.prompt_ids) + list(ids)])
        with torch.no_grad():
            logits = model.module(input_ids=sequence).logits[0].float()
        forced = torch.log_softmax(logits, dim=-1)[len(completion.prompt_ids) - 1 : -1]
        expected = forced.gather(-1, torch.tensor(ids)[:, None])[:, 0].tolist()
        got = [token.logprob for token in choice.logprobs]
        assert got == pytest.approx(expected, abs=1e-4)


def test_greedy_at_temperature_zero_and_the_token_limit(model):
    first = model.complete(MESSAGES, temperature=0)
    again = model.complete(MESSAGES, temperature=0)
    assert first.completion_ids == again.completion_ids
    assert first.logprobs is None  # only when asked
    model.max_new_tokens = 3
    short = model.complete(MESSAGES, temperature=0)
    assert short.completion_ids == first.completion_ids[:3]


def test_token_ids_support_and_the_reply_encoding(model):
    assert token_model(model) is model
    ids = model.encode_reply("```bash\nls\n```")
    assert ids[-1] == model.end_of_turn_id == model.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert model.decode(ids) == "```bash\nls\n```<|im_end|>"


def test_only_what_follows_the_stored_ids_is_rendered(model):
    first = model.complete(MESSAGES, temperature=0)
    reply = {"role": "assistant", "content": first.text}
    messages = [*MESSAGES, reply, {"role": "user", "content": "exit code 0"}]
    held = [*first.prompt_ids, *first.completion_ids]
    added = model.context_ids(messages, held)
    assert model.decode([*held, *added]) == model.render(messages)
    assert model.decode(added).endswith(
        "<|im_start|>user\nexit code 0<|im_end|>\n<|im_start|>assistant\n"
    )
    # stored ids that the conversation does not start with are refused, naming the difference
    with pytest.raises(ModelError) as raised:
        model.context_ids(messages, model.encode("<|im_start|>system\nsomething else"))
    assert raised.value.kind == "template"
    assert "something else" in str(raised.value) and model.name in str(raised.value)


def test_tool_calls_are_refused(model):
    with pytest.raises(ModelError) as raised:
        model.complete(MESSAGES, tools=[{"type": "function", "function": {"name": "bash"}}])
    assert raised.value.kind == "bad_input"
    assert "bash_blocks" in str(raised.value)


def test_reload_and_load_state_update_the_same_module(model, tiny_model_path):
    import torch

    module = model.module
    weight = next(module.parameters())
    saved = weight.detach().clone()
    with torch.no_grad():
        weight.zero_()
    model.reload()
    assert model.module is module
    assert torch.equal(next(module.parameters()), saved)
    state = {k: torch.zeros_like(v) for k, v in module.state_dict().items()}
    model.load_state(state)
    assert not next(module.parameters()).any()


def test_resolve_hf_path(tiny_model_path):
    model = resolve_model(f"hf/{tiny_model_path}", hf_options={"max_new_tokens": 2})
    assert model.name == f"hf/{tiny_model_path}"
    assert len(model.complete(MESSAGES).completion_ids) <= 2


def test_a_missing_folder_is_named(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(ModelError) as raised:
        resolve_model(f"hf/{missing}")
    assert raised.value.kind == "bad_input"
    assert str(missing) in str(raised.value) and "not a folder" in str(raised.value)
    with pytest.raises(ModelError, match="expected hf/<path"):
        resolve_model("hf/")


def test_a_folder_without_a_tokenizer_is_named(tiny_model_path, tmp_path):
    folder = tmp_path / "weights-only"
    folder.mkdir()
    shutil.copy(tiny_model_path / "config.json", folder)
    with pytest.raises(ModelError) as raised:
        resolve_model(f"hf/{folder}")
    assert str(folder) in str(raised.value) and "no tokenizer" in str(raised.value)


def test_a_tokenizer_without_a_chat_template_is_named(tiny_model_path, tmp_path):
    folder = tmp_path / "base-model"
    shutil.copytree(tiny_model_path, folder)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError) as raised:
        resolve_model(f"hf/{folder}")
    assert str(folder) in str(raised.value) and "no chat template" in str(raised.value)


def test_the_fingerprint_follows_the_tokenizer_not_the_weights(model, tiny_model_path, tmp_path):
    from sprout.models.fingerprint import tokenizer_fingerprint
    from sprout.models.hf import HFModel

    same = tokenizer_fingerprint(model.tokenizer)
    assert model.tokenizer_fingerprint() == {**same, "model": model.name}
    assert same["eos_token_id"] == model.tokenizer.eos_token_id
    assert math.isfinite(same["vocab_size"]) and len(same["sha256"]) == 64
    folder = tmp_path / "other-template"
    shutil.copytree(tiny_model_path, folder)
    (folder / "chat_template.jinja").write_text(
        "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    )
    other = HFModel(folder, max_new_tokens=2)
    assert other.tokenizer_fingerprint()["sha256"] != same["sha256"]
    assert HFModel(tiny_model_path).tokenizer_fingerprint()["sha256"] == same["sha256"]


def test_the_core_never_imports_torch():
    code = (
        "import sys, sprout, sprout.agent, sprout.search, sprout.train, sprout.models.hf, "
        "sprout.models.resolve; "
        "loaded = [m for m in ('torch', 'transformers') if m in sys.modules]; "
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
