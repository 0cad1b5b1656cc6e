"""mini-swe-agent's own `DefaultAgent`, played against a scripted loopback chat server.

Its litellm model classes and its local environment, nothing mocked: what the tests of
sprout's mini-swe-agent integration compare sprout with, or read back (its trajectory).
Import it only under the `mini_swe_agent` fixture, which keeps the package quiet and off
the network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sprout.integrations.minisweagent.agent_config import load_spec, recursive_merge
from tests.support.chat_server import ChatServer, Reply, completion_body

SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
TEXT_BASED = ["mini:mini_textbased", "model.model_class=litellm_textbased"]
"""mini-swe-agent's text-based config, with the model class that reads its action regex."""


def text_reply(*commands: str, thought: str = "next.") -> Reply:
    """A reply of the text-based configs: one fenced action per command."""
    blocks = "".join(f"\n```mswea_bash_command\n{c}\n```\n" for c in commands)
    return Reply(body=completion_body(f"THOUGHT: {thought}{blocks}"))


def tool_reply(*commands: str, text: str = "Next.") -> Reply:
    """A reply of the tool-call configs: one call of the `bash` tool per command."""
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": c})},
        }
        for i, c in enumerate(commands)
    ]
    return Reply(body=completion_body(text, tool_calls=calls or None))


def run_mini(
    specs: list[str],
    replies: list[Reply],
    workdir: Path,
    task: str,
    *,
    trajectory: Path | None = None,
    instance_id: str | None = None,
    environment: Any = None,
) -> tuple[list[dict[str, Any]], str]:
    """mini-swe-agent's DefaultAgent with the config `specs`, its local environment in
    `workdir` (or `environment`), on `task`: (the requests the server got, the exit
    status). With `trajectory`, the agent saves its trajectory there, as `mini-extra
    swebench` does."""
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
        if environment is None:
            local = {**config.get("environment", {}), "cwd": str(workdir)}
            local.pop("environment_class", None)
            environment = LocalEnvironment(**local)
        agent = DefaultAgent(model, environment, **config["agent"])
        result = agent.run(task)
        if trajectory is not None:
            agent.save(trajectory, {"instance_id": instance_id} if instance_id else {})
        return server.requests, result["exit_status"]


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
