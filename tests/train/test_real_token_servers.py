"""Token-exact rollouts against real servers: the ids a run stores are, token for token, the
ids the server was sent and sampled, across a branch point too.

A recording proxy sits between sprout and the server, so the check reads what
crossed the wire, not what sprout believes it sent. llama.cpp runs here (the
binary `make test` builds, SmolLM2-135M); vLLM runs where an accelerator is:
`benchmarks/gpu/vllm_token_exact.sh` starts it and names it in SPROUT_VLLM_URL.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from sprout.agent import ActorConfig
from sprout.models.config import ModelConfig
from sprout.models.resolve import resolve_model
from sprout.models.window import ContextWindow, context_window
from tests.support.llama_server import Recorder, llama_server, recording_proxy
from tests.support.world import make_world

STARTING_TURN = "Let me look first.\n\n```bash\nls\n```"


@dataclass(frozen=True)
class Wire:
    """Where one server's sampling route keeps what the check compares."""

    route: str
    sampled: Callable[[Any], list[int]]
    logprobs: Callable[[Any], list[float]]
    reused: Callable[[Any], int]
    """Prompt tokens the server took from its cache, by its own count."""


LLAMACPP = Wire(
    "/completion",
    lambda got: got["tokens"],
    lambda got: [p["logprob"] for p in got["completion_probabilities"]],
    lambda got: got["timings"]["cache_n"],
)
VLLM = Wire(
    "/v1/completions",
    lambda got: got["choices"][0]["token_ids"],
    lambda got: got["choices"][0]["logprobs"]["token_logprobs"],
    lambda got: (got.get("usage", {}).get("prompt_tokens_details") or {}).get("cached_tokens", 0),
)


def flat(path) -> list[int]:
    return [i for context, completion, _ in path for i in (*context, *completion)]


def play_and_check(world, spec: str, url: str, recorder: Recorder, wire: Wire) -> None:
    """A root of three turns and a branch at turn 1, each call checked against the wire."""
    options = ModelConfig(max_tokens=24, max_retries=0, timeout_s=120)
    model = resolve_model(spec, base_url=url, options=options)
    actor = world.actor(model, ActorConfig(max_turns=3, temperature=0.7))
    root = actor.run(world.root(actor))
    root_calls = recorder.calls(wire.route)
    retained = flat(world.tree.token_path(root, 1))
    before = len(recorder.exchanges)
    branch = actor.run(world.tree.branch(root, 1, STARTING_TURN))
    branch_calls = recorder.calls(wire.route, since=before)

    assert root.status == "limit" and branch.status == "limit", (root, branch)
    for attempt, calls in ((root, root_calls), (branch, branch_calls)):
        path = world.tree.token_path(attempt)
        own = [k for k, (_, _, turn) in enumerate(path) if turn.attempt_id == attempt.id]
        actor_turns = [k for k in own if path[k][2].author == "actor"]
        assert len(calls) == len(actor_turns) >= 1
        for (sent, got), k in zip(calls, actor_turns, strict=True):
            context, completion, turn = path[k]
            assert sent["prompt"] == flat(path[:k]) + list(context), "sent as stored ids"
            assert list(completion) == wire.sampled(got), "stored as sampled"
            assert list(turn.completion_logprobs) == pytest.approx(wire.logprobs(got))
    starting = world.tree.own_turns(branch)[0]
    assert starting.author == "reviewer"
    first_sent, first_got = branch_calls[0]
    expected = retained + list(starting.context_ids) + list(starting.completion_ids)
    assert first_sent["prompt"][: len(expected)] == expected, "the branch continues the ids"
    reused = wire.reused(first_got)
    assert reused >= len(retained), "the server reused its cache for the whole retained prefix"
    assert world.tree.model_calls(attempt_id=branch.id)[0].cached_tokens == reused


@pytest.mark.sandbox
@pytest.mark.slow
def test_llama_server_stores_what_it_sampled(overlay_store, tmp_path):
    world = make_world(overlay_store, tmp_path, files={"README": "a task\n"})
    with (
        llama_server(tmp_path / "server.log") as server,
        recording_proxy(server) as (url, recorder),
    ):
        play_and_check(world, "llamacpp/smollm2", url, recorder, LLAMACPP)
        window = context_window(resolve_model("llamacpp/smollm2", base_url=url))
    assert world.tree.meta().tokenizer.server == "llama.cpp"
    assert window == ContextWindow(4096, f"{url}/props n_ctx")  # its -c 4096, one slot


@pytest.mark.sandbox
@pytest.mark.slow
def test_vllm_stores_what_it_sampled(overlay_store, tmp_path):
    """Needs a vLLM server (0.10.2 or later, prefix caching and prompt-token details on)
    serving a model named SPROUT_VLLM_MODEL at SPROUT_VLLM_URL."""
    server, name = os.environ.get("SPROUT_VLLM_URL"), os.environ.get("SPROUT_VLLM_MODEL")
    if not server or not name:
        pytest.skip("no vLLM server: benchmarks/gpu/vllm_token_exact.sh runs this on a GPU")
    world = make_world(overlay_store, tmp_path, files={"README": "a task\n"})
    with recording_proxy(server) as (url, recorder):
        play_and_check(world, f"vllm/{name}", url, recorder, VLLM)
        window = context_window(resolve_model(f"vllm/{name}", base_url=url))
    assert world.tree.meta().tokenizer.server == "vLLM"
    assert window is not None and window.source.endswith("/v1/models max_model_len")
