"""The actor with the `openai/` client against a real chat-completions server on loopback."""

from __future__ import annotations

import json
import socket

import pytest

from sprout.agent import ActorConfig
from sprout.models.config import ModelConfig
from sprout.models.openai_client import OpenAIModel
from tests.support.chat_server import ChatServer, Reply, completion_body
from tests.support.scripted_model import bash, submit
from tests.support.world import World

pytestmark = pytest.mark.sandbox


@pytest.fixture
def server():
    with ChatServer() as running:
        yield running


def model_for(base_url: str) -> OpenAIModel:
    return OpenAIModel("m", base_url=base_url, api_key="k", options=ModelConfig(max_retries=0))


def dead_url() -> str:
    """A loopback address nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_an_attempt_runs_to_submit_with_the_servers_token_counts(world: World, server):
    usage = [(120, 30, 64), (180, 12, None), (210, 5, 128)]
    texts = [bash("echo fixed > app.txt"), bash("cat app.txt"), submit()]
    for text, (prompt, completion, cached) in zip(texts, usage, strict=True):
        body = completion_body(
            text, prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached
        )
        server.replies.append(Reply(body=body))
    actor = world.actor(model_for(server.base_url))
    attempt = actor.run(world.root(actor))

    assert attempt.status == "submitted"
    turns = world.tree.own_turns(attempt)
    assert [(t.prompt_tokens, t.completion_tokens, t.cached_tokens) for t in turns] == usage
    assert not any(t.estimated for t in turns)
    totals = world.tree.tokens(attempt_id=attempt.id)
    assert totals.spent == sum(p + c for p, c, _ in usage)
    assert totals.by_role == {"actor": totals.spent}
    assert totals.estimated is False
    # what went over the wire is exactly the stored context before each turn
    assert len(server.requests) == 3
    for k, request in enumerate(server.requests):
        assert request["model"] == "m"
        assert json.dumps(request["messages"]) == json.dumps(world.tree.messages(attempt, k))
        assert "tools" not in request
    assert world.shell(world.tree.checkpoint(attempt), "cat app.txt") == "fixed\n"


def test_tool_calls_round_trip_through_the_server(world: World, server):
    def call(call_id: str, command: str) -> dict:
        arguments = json.dumps({"command": command})
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": "bash", "arguments": arguments},
        }

    server.replies.append(Reply(body=completion_body("", tool_calls=[call("c1", "echo hi")])))
    done = [call("c2", "echo SPROUT_SUBMIT")]
    server.replies.append(Reply(body=completion_body("", tool_calls=done)))
    actor = world.actor(model_for(server.base_url), ActorConfig(call_format="tool_calls"))
    attempt = actor.run(world.root(actor))

    assert attempt.status == "submitted"
    first, second = server.requests
    assert [tool["function"]["name"] for tool in first["tools"]] == ["bash"]
    assistant, tool = second["messages"][-2:]
    assert assistant["tool_calls"][0]["id"] == "c1"
    assert tool == {"role": "tool", "tool_call_id": "c1", "content": "exit code 0\nhi"}


def test_a_refused_key_mid_attempt_ends_it_as_an_error_keeping_its_turns(world: World, server):
    server.replies.append(Reply(body=completion_body(bash("echo one > one"), prompt_tokens=50)))
    server.replies.append(Reply(status=401, body={"error": {"message": "bad key"}}))
    actor = world.actor(model_for(server.base_url))
    attempt = actor.run(world.root(actor))

    assert attempt.status == "error"
    assert "openai/m" in attempt.end_reason
    assert "API key" in attempt.end_reason
    # the turn before the failure is committed, with its checkpoint and its tokens
    (turn,) = world.tree.own_turns(attempt)
    assert turn.index == 1
    assert world.shell(turn.checkpoint, "cat one") == "one\n"
    assert world.tree.tokens(attempt_id=attempt.id).spent == 53
    # a reopened store reads the same
    assert world.tree.find_attempt(attempt.id).end_reason == attempt.end_reason


def test_an_unreachable_server_ends_a_branch_as_an_error_keeping_its_starting_turn(
    world: World, server
):
    server.replies.append(Reply(body=completion_body(bash("echo one > one"))))
    server.replies.append(Reply(body=completion_body(submit())))
    actor = world.actor(model_for(server.base_url))
    parent = actor.run(world.root(actor))
    assert parent.status == "submitted"

    url = dead_url()
    branch = world.tree.branch(parent, 1, starting_turn=bash("echo two > two"))
    ended = world.actor(model_for(url)).run(branch)

    assert ended.status == "error"
    assert "cannot reach" in ended.end_reason
    assert url.split("/v1")[0] in ended.end_reason
    (starting,) = world.tree.own_turns(ended)
    assert starting.author == "reviewer"
    assert world.shell(starting.checkpoint, "cat one two") == "one\ntwo\n"
    # the parent is untouched
    assert world.tree.attempt(parent.id).status == "submitted"
    assert len(world.tree.own_turns(parent)) == 2
