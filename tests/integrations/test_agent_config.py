"""`--agent-config`: mini-swe-agent's configs read as mini-swe-agent reads them, from the
installed package, and played by `sprout run` end to end."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from sprout.agent import ActorConfig
from sprout.cli import main
from sprout.errors import BAD_INPUT
from sprout.integrations.minisweagent import AgentConfigError, read_agent_config
from sprout.runfolder import RunFolder
from tests.support.chat_server import ChatServer, Reply, completion_body
from tests.support.mini_agent import SENTINEL, TEXT_BASED
from tests.support.requirements import require_host_image
from tests.support.sprout_shell import sprout_shell
from tests.support.taskfolders import two_edits_task


@pytest.fixture(autouse=True)
def installed():
    """Found, not imported: sprout reads the package's files (importing it prints a banner)."""
    if importlib.util.find_spec("minisweagent") is None:
        pytest.skip("mini-swe-agent is not installed (the integrations extra)")


def test_a_shipped_config_maps_onto_the_actors_limits():
    """mini:swebench as mini-swe-agent ships it: 250 steps, 60 s calls in /testbed with its
    variables, tool calls of its own bash tool; a later spec wins, as with mini's -c."""
    config = read_agent_config(["mini:swebench", "agent.step_limit=7"])
    mini = config.mini_swe_agent
    assert mini is not None
    assert (config.max_turns, config.call_timeout_s, config.call_format) == (7, 60, "tool_calls")
    assert (mini.cwd, mini.env["PAGER"], mini.action_regex) == ("/testbed", "cat", None)
    assert mini.bash_tool is not None and mini.bash_tool["function"]["name"] == "bash"
    assert config.submit_sentinel == SENTINEL and config.max_format_errors_in_a_row == 3
    assert "<pr_description>" in mini.instance_template
    text = read_agent_config(TEXT_BASED)
    assert text.call_format == "bash_blocks" and text.max_calls_per_turn == 1
    assert text.mini_swe_agent is not None and text.mini_swe_agent.bash_tool is None


def test_a_config_file_of_ones_own_over_the_actor_table(tmp_path: Path):
    """A YAML file of one's own; what it does not set (log-probs) comes from [actor]."""
    path = tmp_path / "agent.yaml"
    path.write_text(
        "agent:\n  system_template: You act.\n  instance_template: 'Do: {{task}}'\n"
        "  step_limit: 5\n  wall_time_limit_seconds: 90\nenvironment:\n  timeout: 12\n"
        "  env: {LANG: C.UTF-8}\nmodel:\n  model_class: litellm_textbased\n"
        "  observation_template: '{{output.output}}'\n"
        "  model_kwargs: {temperature: 0.2}\n"
    )
    config = read_agent_config([str(path)], ActorConfig(logprobs=True))
    assert (config.max_turns, config.max_wall_s, config.call_timeout_s) == (5, 90, 12)
    assert (config.temperature, config.logprobs) == (0.2, True)
    mini = config.mini_swe_agent
    assert mini is not None and mini.env == {"LANG": "C.UTF-8"}
    # the text-based class's own defaults fill what the file leaves out
    assert mini.action_regex is not None and "mswea_bash_command" in mini.action_regex
    assert "{{actions|length}}" in mini.format_error_template


@pytest.mark.parametrize(
    ("specs", "named"),
    [
        (["mini:swebench", "agent.step_limt=3"], "agent.step_limt=3: agent.step_limt: not a key"),
        (["agnet.step_limit=3"], "agnet.step_limit=3: agnet: not a section"),
        (["mini:swebenhc"], "mini:swebenhc: mini-swe-agent 2.4.6 ships no config 'swebenhc'"),
        (["mini:swebench", "model.model_class=litellm_response"], "model.model_class"),
        (["mini:swebench", 'environment.env={"1X": "y"}'], "environment.env: Value error"),
        ([*TEXT_BASED, "model.action_regex=("], "model.action_regex: Value error, '(' is not"),
        (["agent.instance_template=x"], "agent.system_template: Field required"),
    ],
)
def test_a_bad_config_is_one_line_naming_the_spec_and_key(specs, named):
    with pytest.raises(AgentConfigError) as caught:
        read_agent_config(specs)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_a_typo_ends_sprout_run_with_exit_2_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["run", str(tmp_path), "--model", "oracle", "--out", str(out)]
    specs = ["--agent-config", "mini:swebench", "--agent-config", "agent.x=1"]
    assert main([*args, *specs]) == BAD_INPUT
    error = capsys.readouterr().err
    assert error.startswith("sprout run: agent.x=1: agent.x: not a key mini-swe-agent")
    assert error.count("\n") == 1 and not out.exists()


def test_sprout_run_plays_a_task_with_mini_swe_agents_prompts(tmp_path: Path):
    """`sprout run --agent-config`: the server is sent mini-swe-agent's prompts and
    observations, the task resolves on mini-swe-agent's sentinel, the run stores the
    protocol with its settings, and `--resume` with the same specs is the same run."""
    require_host_image()
    two_edits_task(tmp_path / "tasks")
    replies = [
        "Fix both.\n```mswea_bash_command\necho 1 > a.txt && echo 2 > b.txt && cat a.txt\n```",
        f"Done.\n```mswea_bash_command\necho {SENTINEL}\n```",
    ]
    args = ["run", str(tmp_path / "tasks"), "--model", "openai/m", "--method", "pass@1"]
    args += ["--out", str(tmp_path / "run")]
    for spec in TEXT_BASED:
        args += ["--agent-config", spec]
    with ChatServer() as server:
        server.replies.extend(Reply(body=completion_body(text)) for text in replies)
        assert main([*args, "--base-url", server.base_url]) == 0
    first, second = (request["messages"] for request in server.requests)
    assert first[0]["content"].startswith("You are a helpful assistant")
    assert first[1]["content"].startswith("Please solve this issue: Put 1 in a.txt")
    assert second[-1] == {"role": "user", "content": second[-1]["content"]}
    assert second[-1]["content"].startswith("<returncode>0</returncode>\n<output>\n1\n")
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert all(row["pass@1"]["resolved"] for row in results["tasks"].values())
    run = RunFolder.open(tmp_path / "run")
    try:
        stored = run.tree.meta().settings
    finally:
        run.close()
    assert ActorConfig.model_validate(stored["actor"]) == read_agent_config(TEXT_BASED)
    with ChatServer() as again:
        assert main([*args, "--base-url", again.base_url, "--resume"]) == 0
    assert again.requests == []
    # the turn that mini-swe-agent's protocol played is a checkpoint like any other
    assert "1\n2\n" in sprout_shell(tmp_path / "run", "1:1", "cat a.txt b.txt")
