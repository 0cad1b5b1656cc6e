"""sprout's actor with a mini-swe-agent config speaks as mini-swe-agent's own `DefaultAgent`.

Both play the same scripted replies from one loopback chat server: mini-swe-agent through
its litellm model classes and its local environment, sprout through its `openai/` client
and the jail. The server's record of what each sent, turn by turn, must agree, and so
must how each attempt ended. Nothing of mini-swe-agent is mocked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.integrations.minisweagent import read_agent_config
from sprout.models.config import ModelConfig
from sprout.models.openai_client import OpenAIModel
from tests.support.chat_server import ChatServer, Reply
from tests.support.mini_agent import SENTINEL, normalized, run_mini, text_reply, tool_reply
from tests.support.world import World

pytestmark = pytest.mark.sandbox
TASK = "Write hi to f.txt, show it, then submit."
STATUS = {"Submitted": "submitted", "LimitsExceeded": "limit", "RepeatedFormatError": "limit"}
"""mini-swe-agent's exit status -> sprout's attempt status for the same end."""


def run_sprout(world: World, specs: list[str], replies: list[Reply]) -> tuple[list, str]:
    """sprout's actor with `--agent-config specs` in the jail: (requests, attempt status)."""
    config = read_agent_config(specs)
    with ChatServer() as server:
        server.replies.extend(replies)
        model = OpenAIModel(
            "scripted", base_url=server.base_url, api_key="k", options=ModelConfig(max_retries=0)
        )
        actor = world.actor(model, config)
        attempt = actor.run(world.root(actor, TASK))
        return server.requests, attempt.status


def play_both(world: World, specs: list[str], replies: list[Reply], tmp_path: Path):
    """Both agents on `replies`; the same messages at every call and the same end are
    asserted. (mini-swe-agent's exit status, the requests sprout's actor sent.)"""
    here = tmp_path / "local"
    here.mkdir()
    mini_requests, mini_status = run_mini(specs, replies, here, TASK)
    sprout_requests, sprout_status = run_sprout(world, specs, replies)
    assert len(sprout_requests) == len(mini_requests)
    for turn, (theirs, ours) in enumerate(zip(mini_requests, sprout_requests, strict=True)):
        assert normalized(ours["messages"]) == normalized(theirs["messages"]), f"call {turn}"
        assert ours.get("tools") == theirs.get("tools"), f"call {turn}"
    assert STATUS[mini_status] == sprout_status
    return mini_status, sprout_requests


def test_text_based_config_sends_what_mini_swe_agent_sends(world, mini_swe_agent, tmp_path):
    """mini:mini_textbased with its text-based model class: a reply with two actions is a
    format error (the model is shown only the error), one action runs, the sentinel
    submits."""
    specs = ["mini:mini_textbased", "model.model_class=litellm_textbased"]
    replies = [
        text_reply("ls", "pwd"),
        text_reply("printf 'hi\\n' > f.txt && cat f.txt"),
        text_reply(f"echo {SENTINEL}"),
    ]
    status, requests = play_both(world, specs, replies, tmp_path)
    assert status == "Submitted"
    first_error = requests[1]["messages"][-1]
    assert first_error["role"] == "user" and "found 2 actions" in first_error["content"]
    assert "<output>\nhi\n</output>" in requests[2]["messages"][-1]["content"]


def test_tool_call_config_sends_what_mini_swe_agent_sends(world, mini_swe_agent, tmp_path):
    """mini:swebench (tool calls, `tool` observations by call id) with a step limit of 3: a
    reply with no tool call is a format error, and the limit ends both attempts alike."""
    specs = ["mini:swebench", "environment.cwd=", "agent.step_limit=3"]
    replies = [
        tool_reply("printf 'hi\\n' > f.txt", "cat f.txt"),
        tool_reply(text="I think I am done."),
        tool_reply("wc -c f.txt"),
    ]
    status, requests = play_both(world, specs, replies, tmp_path)
    assert status == "LimitsExceeded"
    assert [t["function"]["name"] for t in requests[0]["tools"]] == ["bash"]
    answered = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answered] == ["call_0", "call_1"]
