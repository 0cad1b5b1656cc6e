"""`llamacpp/` against a real llama-server (SmolLM2-135M): the ids a run stores are, token
for token, the ids the server was sent and sampled, across a branch point too.

A recording proxy sits between sprout and the server, so the check reads what
crossed the wire, not what sprout believes it sent.
"""

from __future__ import annotations

import pytest

from sprout.agent import ActorConfig
from sprout.models.config import ModelConfig
from sprout.models.resolve import resolve_model
from tests.agent.helpers import make_world
from tests.train.llama_server import llama_server, recording_proxy

STARTING_TURN = "Let me look first.\n\n```bash\nls\n```"


def flat(path) -> list[int]:
    return [i for context, completion, _ in path for i in (*context, *completion)]


@pytest.mark.sandbox
@pytest.mark.slow
def test_an_attempt_and_its_branch_store_what_llama_server_sampled(overlay_store, tmp_path):
    world = make_world(overlay_store, tmp_path, files={"README": "a task\n"})
    options = ModelConfig(max_tokens=24, max_retries=0, timeout_s=120)
    with (
        llama_server(tmp_path / "server.log") as server,
        recording_proxy(server) as (url, recorder),
    ):
        model = resolve_model("llamacpp/smollm2", base_url=url, options=options)
        actor = world.actor(model, ActorConfig(max_turns=3, temperature=0.7))
        root = actor.run(world.root(actor))
        root_calls = recorder.completions()
        retained = flat(world.tree.token_path(root, 1))
        before = len(recorder.exchanges)
        branch = actor.run(world.tree.branch(root, 1, STARTING_TURN))
        branch_calls = [
            (sent, got)
            for route, sent, got in recorder.exchanges[before:]
            if route == "/completion"
        ]

    assert root.status == "limit" and branch.status == "limit", (root, branch)
    for attempt, calls in ((root, root_calls), (branch, branch_calls)):
        path = world.tree.token_path(attempt)
        own = [k for k, (_, _, turn) in enumerate(path) if turn.attempt_id == attempt.id]
        actor_turns = [k for k in own if path[k][2].author == "actor"]
        assert len(calls) == len(actor_turns) >= 1
        for (sent, got), k in zip(calls, actor_turns, strict=True):
            context, completion, turn = path[k]
            assert sent["prompt"] == flat(path[:k]) + list(context), "sent as stored ids"
            assert list(completion) == got["tokens"], "stored as sampled"
            logprobs = [p["logprob"] for p in got["completion_probabilities"]]
            assert list(turn.completion_logprobs) == pytest.approx(logprobs)
    starting = world.tree.own_turns(branch)[0]
    assert starting.author == "reviewer"
    first_prompt = branch_calls[0][0]["prompt"]
    expected = retained + list(starting.context_ids) + list(starting.completion_ids)
    assert first_prompt[: len(expected)] == expected, "the branch continues the parent's ids"
    reused = branch_calls[0][1]["timings"]["cache_n"]
    assert reused >= len(retained), "the server reused its cache for the whole retained prefix"
    [first_call] = world.tree.model_calls(attempt_id=branch.id)[:1]
    assert first_call.cached_tokens == reused
    assert world.store.get_meta("tokenizer")["server"] == "llama.cpp"
