"""sprout's actor with a mini-swe-agent config speaks as mini-swe-agent's own `DefaultAgent`.

Both play the same scripted replies from one loopback chat server: mini-swe-agent through
its litellm model classes and its local environment, sprout through its `openai/` client
and the jail. The server's record of what each sent, turn by turn, must agree, and so
must how each attempt ended. Nothing of mini-swe-agent is mocked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sprout.integrations.minisweagent import read_agent_config
from sprout.integrations.minisweagent.agent_config import load_spec, recursive_merge
from sprout.models.config import ModelConfig
from sprout.models.openai_client import OpenAIModel
from tests.support.chat_server import ChatServer, Reply, completion_body
from tests.support.world import World

pytestmark = pytest.mark.sandbox
SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
TASK = "Write hi to f.txt, show it, then submit."
STATUS = {"Submitted": "submitted", "LimitsExceeded": "limit", "RepeatedFormatError": "limit"}
"""mini-swe-agent's exit status -> sprout's attempt status for the same end."""


@pytest.fixture
def mini_swe_agent(monkeypatch, tmp_path):
    """mini-swe-agent importable without its banner, its home config or a network fetch."""
    monkeypatch.setenv("MSWEA_SILENT_STARTUP", "1")
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "mini-config"))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return pytest.importorskip("minisweagent", reason="mini-swe-agent is not installed")


def text_reply(*commands: str) -> Reply:
    blocks = "".join(f"\n```mswea_bash_command\n{c}\n```\n" for c in commands)
    return Reply(body=completion_body(f"THOUGHT: next.{blocks}"))


def tool_reply(*commands: str, text: str = "Next.") -> Reply:
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": c})},
        }
        for i, c in enumerate(commands)
    ]
    return Reply(body=completion_body(text, tool_calls=calls or None))


def normalized(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a message says, whichever client serialized it: its role and content, its tool
    calls (id, name, arguments as data) and the call it answers."""
    said = []
    for message in messages:
        item: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
        if message.get("tool_calls"):
            item["tool_calls"] = [
                (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in message["tool_calls"]
            ]
        if message.get("tool_call_id"):
            item["tool_call_id"] = message["tool_call_id"]
        said.append(item)
    return said


def run_mini(specs: list[str], replies: list[Reply], workdir: Path) -> tuple[list, str]:
    """mini-swe-agent's DefaultAgent with the config `specs`, its local environment in
    `workdir`: (the requests the server got, the exit status)."""
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models import get_model

    config = recursive_merge(*(load_spec(spec) for spec in specs))
    with ChatServer() as server:
        server.replies.extend(replies)
        model_section = config.get("model", {})
        kwargs = model_section.get("model_kwargs", {})
        model = get_model(
            "openai/scripted",
            {
                **model_section,
                "model_kwargs": {**kwargs, "api_base": server.base_url, "api_key": "k"},
                "cost_tracking": "ignore_errors",
            },
        )
        environment = {**config.get("environment", {}), "cwd": str(workdir)}
        environment.pop("environment_class", None)
        agent = DefaultAgent(model, LocalEnvironment(**environment), **config["agent"])
        result = agent.run(TASK)
        return server.requests, result["exit_status"]


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
    mini_requests, mini_status = run_mini(specs, replies, here)
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
