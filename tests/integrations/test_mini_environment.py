"""sprout's sandbox as mini-swe-agent's environment (`environment_class`).

mini-swe-agent's own `DefaultAgent` and its litellm model class, against a scripted
loopback server, on an environment that mini-swe-agent's own `get_environment` builds
from the class path: every command runs in the jail, every step is a checkpoint of a
sprout run, and the verifier scores the submission.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sprout.runfolder import RunFolder
from sprout.viewer.report import write_report
from tests.support.mini_agent import SENTINEL, run_mini, tool_reply
from tests.support.repo_paths import SPROUT
from tests.support.requirements import require_host_image
from tests.support.taskfolders import TWO_EDITS, two_edits_task

pytestmark = pytest.mark.sandbox
CLASS = "sprout.integrations.minisweagent.environment.SproutEnvironment"
INSTRUCTION = "Put 1 in a.txt and 2 in b.txt.\n"


def shell(run: Path, ref: str, command: str) -> str:
    found = subprocess.run(
        [str(SPROUT), "shell", str(run), ref],
        input=command + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.returncode == 0, found.stderr
    return found.stdout


def test_default_agent_on_sprouts_environment_leaves_a_checkpoint_per_step(
    tmp_path: Path, mini_swe_agent: object
) -> None:
    """Three steps (the first with two tool calls), three turns of one attempt: each opens
    with the files of its step in `sprout shell`, the submission is verified, and the run
    folder renders in the viewer's report."""
    require_host_image()
    from minisweagent.environments import get_environment

    task = two_edits_task(tmp_path / "tasks")
    run = tmp_path / "run"
    environment = get_environment(
        {"environment_class": CLASS, "task": str(task), "run": str(run), "timeout": 20}
    )
    replies = [
        tool_reply("echo 1 > a.txt", "echo 2 > b.txt"),
        tool_reply("cat a.txt b.txt"),
        tool_reply(f"echo {SENTINEL}"),
    ]
    try:
        requests, status = run_mini(
            ["mini:swebench"], replies, tmp_path, INSTRUCTION, environment=environment
        )
    finally:
        environment.cleanup()
    assert status == "Submitted"
    assert "<output>\n1\n2\n</output>" in requests[2]["messages"][-1]["content"]

    folder = RunFolder.open(run)
    try:
        [attempt] = folder.tree.attempts(TWO_EDITS)
        turns = folder.tree.own_turns(attempt)
        assert (attempt.status, attempt.reward) == ("submitted", 1.0)
        assert [[c.command for c in t.calls] for t in turns] == [
            ["echo 1 > a.txt", "echo 2 > b.txt"],
            ["cat a.txt b.txt"],
            [f"echo {SENTINEL}"],
        ]
        assert write_report(folder).exists()
    finally:
        folder.close()
    assert shell(run, "1:0", "cat a.txt b.txt") == "0\n0\n"
    assert shell(run, "1:1", "cat a.txt b.txt") == "1\n2\n"


def test_an_agent_that_stops_without_submitting_ends_limit(
    tmp_path: Path, mini_swe_agent: object
) -> None:
    """mini-swe-agent's step limit stops the agent: its last step is still a checkpoint,
    and the attempt ends `limit` with nothing verified."""
    require_host_image()
    from minisweagent.environments import get_environment

    task = two_edits_task(tmp_path / "tasks")
    environment = get_environment(
        {"environment_class": CLASS, "task": str(task), "run": str(tmp_path / "run")}
    )
    try:
        _, status = run_mini(
            ["mini:swebench", "agent.step_limit=1"],
            [tool_reply("echo 1 > a.txt")],
            tmp_path,
            INSTRUCTION,
            environment=environment,
        )
    finally:
        environment.cleanup()
    assert status == "LimitsExceeded"
    folder = RunFolder.open(tmp_path / "run")
    try:
        [attempt] = folder.tree.attempts(TWO_EDITS)
        assert (attempt.status, attempt.reward) == ("limit", None)
        assert len(folder.tree.own_turns(attempt)) == 1
    finally:
        folder.close()
    assert shell(tmp_path / "run", "1:1", "cat a.txt") == "1\n"
