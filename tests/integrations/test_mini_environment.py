"""sprout's sandbox as mini-swe-agent's environment (`environment_class`).

mini-swe-agent's own `DefaultAgent` and its litellm model class, against a scripted
loopback server, on an environment that mini-swe-agent's own `get_environment` builds
from the class path: every command runs in the jail, every step is a checkpoint of a
sprout run, and the verifier scores the submission.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.runfolder import RunFolder
from sprout.viewer.report import write_report
from tests.support.chat_server import ChatServer
from tests.support.mini_agent import SENTINEL, run_mini, tool_reply
from tests.support.requirements import require_host_image
from tests.support.sprout_shell import sprout_shell
from tests.support.taskfolders import TWO_EDITS, two_edits_task

pytestmark = pytest.mark.sandbox
CLASS = "sprout.integrations.minisweagent.environment.SproutEnvironment"
INSTRUCTION = "Put 1 in a.txt and 2 in b.txt.\n"


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
    assert sprout_shell(run, "1:0", "cat a.txt b.txt") == "0\n0\n"
    assert sprout_shell(run, "1:1", "cat a.txt b.txt") == "1\n2\n"


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
    assert sprout_shell(tmp_path / "run", "1:1", "cat a.txt") == "1\n"


def test_mini_batch_writes_what_mini_extra_swebench_writes_and_a_run_per_task(
    tmp_path: Path, mini_swe_agent: object
) -> None:
    """`sprout mini-batch`: preds.json and ID/ID.traj.json as mini-extra swebench writes
    them, and beside each trajectory the sprout run of its task, verified; a second run
    skips what preds.json holds."""
    require_host_image()
    two_edits_task(tmp_path / "tasks")
    two_edits_task(tmp_path / "tasks", "two-edits-b")
    out = tmp_path / "out"
    with ChatServer() as server:
        server.replies.extend(
            [
                tool_reply("echo 1 > a.txt && echo 2 > b.txt"),
                tool_reply(f"echo {SENTINEL} && cat a.txt"),
                tool_reply(f"echo {SENTINEL}"),
            ]
        )
        args = ["mini-batch", str(tmp_path / "tasks"), "-m", "openai/scripted", "-o", str(out)]
        for spec in ("mini:swebench", "environment.cwd=", "model.cost_tracking=ignore_errors"):
            args += ["--agent-config", spec]
        args += ["--agent-config", f"model.model_kwargs.api_base={server.base_url}"]
        args += ["--agent-config", "model.model_kwargs.api_key=k"]
        assert main(args) == 0
        assert main(args) == 0, "a second run skips both"
        assert len(server.requests) == 3
    preds = json.loads((out / "preds.json").read_text())
    assert preds[TWO_EDITS]["model_patch"] == "1\n"
    assert preds["two-edits-b"]["model_patch"] == ""
    assert preds[TWO_EDITS]["model_name_or_path"] == "openai/scripted"
    rewards = {}
    for name in (TWO_EDITS, "two-edits-b"):
        saved = json.loads((out / name / f"{name}.traj.json").read_text())
        assert (saved["instance_id"], saved["info"]["exit_status"]) == (name, "Submitted")
        folder = RunFolder.open(out / name / "run")
        try:
            [attempt] = folder.tree.attempts(name)
            rewards[name] = attempt.reward
        finally:
            folder.close()
    assert rewards == {TWO_EDITS: 1.0, "two-edits-b": 0.0}
    assert sprout_shell(out / TWO_EDITS / "run", "1:1", "cat a.txt b.txt") == "1\n2\n"


def test_an_agent_that_crashes_in_a_batch_is_an_error_not_a_failure(
    tmp_path: Path, mini_swe_agent: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """mini-swe-agent's model class raises after its first reply (it cannot price a model
    it does not know, unless told to ignore cost): the instance's exit status is the
    exception's name, its attempt ends `error` with nothing verified, and the batch exits
    1 naming it."""
    require_host_image()
    two_edits_task(tmp_path / "tasks")
    out = tmp_path / "out"
    with ChatServer() as server:
        server.replies.extend([tool_reply("echo 1 > a.txt")])
        args = ["mini-batch", str(tmp_path / "tasks"), "-m", "openai/scripted", "-o", str(out)]
        args += ["--agent-config", "mini:swebench", "--agent-config", "environment.cwd="]
        args += ["--agent-config", f"model.model_kwargs.api_base={server.base_url}"]
        args += ["--agent-config", "model.model_kwargs.api_key=k"]
        assert main(args) == 1
    assert f"sprout mini-batch: {TWO_EDITS}: RuntimeError" in capsys.readouterr().err
    folder = RunFolder.open(out / TWO_EDITS / "run")
    try:
        [attempt] = folder.tree.attempts(TWO_EDITS)
    finally:
        folder.close()
    assert (attempt.status, attempt.fault, attempt.reward) == ("error", "sprout", None)
    assert attempt.end_reason is not None and "RuntimeError" in attempt.end_reason


@pytest.mark.parametrize("held", ["{not json", "[]"])
def test_a_bad_preds_json_is_one_line_and_exit_2_before_any_instance(
    tmp_path: Path,
    mini_swe_agent: object,
    capsys: pytest.CaptureFixture[str],
    held: str,
) -> None:
    two_edits_task(tmp_path / "tasks")
    out = tmp_path / "out"
    out.mkdir()
    (out / "preds.json").write_text(held)
    args = ["mini-batch", str(tmp_path / "tasks"), "-m", "openai/scripted", "-o", str(out)]
    for extra in ([], ["--redo-existing"]):
        assert main([*args, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert str(out / "preds.json") in err and len(err.splitlines()) == 1, err
    assert (out / "preds.json").read_text() == held, "what was saved is kept"
    assert not (out / TWO_EDITS).exists(), "no instance ran"
