"""`vllm/` and `sglang/` rollouts are token-exact: the ids stored are the ids the server
sampled.

Against a loopback server speaking vLLM's and SGLang's token routes with the tiny
model's real tokenizer (tests/support/fake_token_server.py): every prompt is sent as ids,
equal to the stored ids of its path plus what the new messages add; a branch sends its
parent's stored ids unchanged; a reply missing its ids is a server fault.
"""

from __future__ import annotations

import pytest

from sprout.agent import ActorConfig
from sprout.models import ModelError
from sprout.models.config import ModelConfig
from sprout.models.resolve import resolve_model
from tests.support.fake_token_server import FakeTokenServer, serving
from tests.support.scripted_model import bash, submit
from tests.support.world import make_world

STARTING_TURN = "The listing first.\n\n```bash\necho fixed > notes && ls\n```"


@pytest.fixture
def tokenizer(tiny_model_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_path)


def flat(path) -> list[int]:
    return [i for context, completion, _ in path for i in (*context, *completion)]


def served(kind: str, base_url: str, tokenizer_folder):
    options = ModelConfig(max_retries=0, tokenizer=str(tokenizer_folder))
    return resolve_model(f"{kind}/tiny", base_url=base_url, options=options)


@pytest.mark.sandbox
@pytest.mark.parametrize(("kind", "server"), [("vllm", "vLLM"), ("sglang", "SGLang")])
def test_an_attempt_and_its_branch_store_the_ids_the_server_sampled(
    overlay_store, tmp_path, tokenizer, tiny_model_path, kind, server
):
    replies = [bash("ls"), bash("cat README"), submit(), bash("cat notes"), submit()]
    fake = FakeTokenServer(tokenizer, replies)
    world = make_world(overlay_store, tmp_path, files={"README": "a task\n"})
    with serving(fake) as url:
        model = served(kind, url, tiny_model_path)
        actor = world.actor(model, ActorConfig(max_turns=5))
        root = actor.run(world.root(actor))
        assert root.status == "submitted"
        path = world.tree.token_path(root)
        assert len(path) == len(fake.prompts) == 3
        for k, (prompt, (context, completion, turn)) in enumerate(
            zip(fake.prompts, path, strict=True)
        ):
            assert prompt == flat(path[:k]) + list(context)
            assert completion[-1] == fake.end
            assert list(completion[:-1]) == fake.encode(replies[k])
            assert turn.completion_logprobs == tuple([-0.25] * len(completion))
            messages = world.tree.messages(root, turn.index - 1)
            rendered = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
            assert tokenizer.decode(prompt, skip_special_tokens=False) == rendered

        retained = flat(world.tree.token_path(root, 1))
        fake.prompts.clear()
        branch = actor.run(world.tree.branch(root, 1, STARTING_TURN))

    assert branch.status == "submitted"
    starting = world.tree.own_turns(branch)[0]
    assert starting.completion_ids == (*fake.encode(STARTING_TURN), fake.end)
    expected = retained + list(starting.context_ids) + list(starting.completion_ids)
    assert fake.prompts[0][: len(expected)] == expected
    assert world.tree.meta().tokenizer.server == server


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("kind", "missing", "said"),
    [("vllm", "token_ids", "0.10.2"), ("sglang", "output_token_logprobs", "meta_info")],
)
def test_a_reply_without_its_token_ids_is_a_server_fault(
    overlay_store, tmp_path, tokenizer, tiny_model_path, kind, missing, said
):
    fake = FakeTokenServer(tokenizer, [bash("ls")])
    fake.broken = missing
    world = make_world(overlay_store, tmp_path)
    with serving(fake) as url:
        actor = world.actor(served(kind, url, tiny_model_path), ActorConfig(max_turns=2))
        attempt = actor.run(world.root(actor))
    assert (attempt.status, attempt.fault) == ("error", "model")
    assert missing in attempt.end_reason and said in attempt.end_reason


def test_a_token_server_needs_its_address(tmp_path):
    with pytest.raises(ModelError) as raised:
        resolve_model("vllm/tiny", base_url=None)
    assert raised.value.kind == "bad_input" and "--base-url" in str(raised.value)
    with pytest.raises(ModelError, match="llamacpp/<model name>"):
        resolve_model("llamacpp/", base_url="http://127.0.0.1:1")
    with pytest.raises(ModelError, match=r"tokenizer in the \[model\] table"):
        resolve_model("sglang/x", base_url="http://127.0.0.1:1")
    with pytest.raises(ModelError, match="--base-url ftp://x: expected http"):
        resolve_model("vllm/x", base_url="ftp://x")


def test_an_unreachable_server_is_a_server_fault_said_with_its_address():
    told: list[str] = []
    model = resolve_model(
        "llamacpp/x", base_url="http://127.0.0.1:9", options=ModelConfig(max_retries=1)
    )
    model.server.http.on_retry = told.append
    with pytest.raises(ModelError) as raised:
        model.complete([{"role": "user", "content": "hi"}], prefix_ids=[])
    assert raised.value.kind == "unreachable"
    assert "http://127.0.0.1:9/apply-template" in str(raised.value)
    assert len(told) == 1 and "retry 1 of 1" in told[0]


def test_the_learner_takes_the_ids_a_vllm_server_of_its_model_made(
    tokenizer, tiny_model_path, tmp_path
):
    from sprout.models.fingerprint import check_tokenizer, tokenizer_fingerprint
    from sprout.train.tiny import build_tiny_model

    with serving(FakeTokenServer(tokenizer, [])) as url:
        recorded = served("vllm", url, tiny_model_path).tokenizer_fingerprint()
    assert "sha256" not in recorded  # vLLM shows ids, not its vocabulary
    check_tokenizer(recorded, tokenizer_fingerprint(tokenizer), where="run")

    from transformers import AutoTokenizer

    other = AutoTokenizer.from_pretrained(build_tiny_model(tmp_path / "other", vocab_size=300))
    with pytest.raises(ModelError, match="its token ids were made by tokenizer"):
        check_tokenizer(recorded, tokenizer_fingerprint(other), where="run")
