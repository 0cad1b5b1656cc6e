"""`sprout run --from-trajectories`: a mini-swe-agent run, branched by sprout.

mini-swe-agent's own `DefaultAgent` plays a task in a local folder and saves its
trajectory, as `mini-extra swebench` does; sprout adopts it as a root, makes its
checkpoints by running its commands again in the jail, and the analyst, the reviewer and
a branch go on from there. No model call of the trajectory is made again.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.errors import BAD_INPUT
from sprout.runfolder import RunFolder
from tests.support.chat_server import ChatServer, Reply, completion_body
from tests.support.mini_agent import SENTINEL, TEXT_BASED, normalized, run_mini, text_reply
from tests.support.requirements import require_host_image
from tests.support.sprout_shell import sprout_shell
from tests.support.taskfolders import TWO_EDITS, two_edits_task

pytestmark = pytest.mark.sandbox
LISTING = (
    "find . -mindepth 1 -printf '%y %m %p\\n' | sort && "
    "find . -type f -print0 | sort -z | xargs -0 -r sha256sum"
)
"""Every path under the current directory (type, mode) and each file's hash."""
INSTRUCTION = "Put 1 in a.txt and 2 in b.txt.\n"
MISTAKE = [  # turn 1 right, turn 2 writes b.txt wrong (and a file of its own), then submits
    text_reply("echo 1 > a.txt"),
    text_reply(
        "mkdir -p notes && printf 'draft\\n' > notes/n.txt && chmod 600 notes/n.txt "
        "&& echo 9 > b.txt && cat b.txt"
    ),
    # a submit whose command does not spell the sentinel: its one call is the submit
    text_reply("echo COMPLETE_TASK_AND_SUBMIT_FINAL_$(echo OUTPUT)"),
]


def mini_run(tmp_path: Path, replies: list[Reply], *, extra_file: bool = False) -> Path:
    """mini-swe-agent on the two-edits task's starting files in a local folder; its
    trajectory saved as `mini-extra swebench` lays it out. Returns that local folder."""
    here = tmp_path / "local"
    here.mkdir()
    (here / "a.txt").write_text("0\n")
    (here / "b.txt").write_text("0\n")
    if extra_file:  # a file the task's sandbox does not have
        (here / "local.txt").write_text("only here\n")
    saved = tmp_path / "trajs" / TWO_EDITS / f"{TWO_EDITS}.traj.json"
    _, status = run_mini(
        TEXT_BASED, replies, here, INSTRUCTION, trajectory=saved, instance_id=TWO_EDITS
    )
    assert status == "Submitted"
    return here


def sprout_run(tmp_path: Path, server: ChatServer, method: str) -> int:
    args = ["run", str(tmp_path / "tasks"), "--model", "openai/m", "--method", method]
    args += ["--rounds", "1", "--out", str(tmp_path / "run"), "--base-url", server.base_url]
    args += ["--from-trajectories", str(tmp_path / "trajs")]
    for spec in TEXT_BASED:
        args += ["--agent-config", spec]
    return main(args)


def json_reply(content: dict) -> Reply:
    return Reply(body=completion_body(json.dumps(content)))


def test_a_mini_swe_agent_run_is_branched_from_its_turn_2(
    tmp_path: Path, mini_swe_agent: object
) -> None:
    """The trajectory's turn 2 is a checkpoint with exactly the files mini-swe-agent's
    folder had then; the branch's context is the trajectory's up to that turn; and only
    the roles and the branch call the model."""
    require_host_image()
    two_edits_task(tmp_path / "tasks")
    local = mini_run(tmp_path, MISTAKE)
    trajectory = json.loads((tmp_path / "trajs" / TWO_EDITS / f"{TWO_EDITS}.traj.json").read_text())
    plan = {
        "parent": 1,
        "boundary": 2,
        "starting_turn": "b.txt needs 2.\n\n```bash\necho 2 > b.txt\n```",
        "reason": "turn 2 wrote 9",
    }
    with ChatServer() as server:
        server.replies.extend(
            [
                json_reply({"why_failed": "b.txt is 9", "keep": "turns 1-2", "boundaries": [2]}),
                json_reply({"branches": [plan]}),
                text_reply(f"echo {SENTINEL}"),
            ]
        )
        assert sprout_run(tmp_path, server, "sprout") == 0
    analyst, _, branch = (request["messages"] for request in server.requests)
    assert "echo 9 > b.txt" in json.dumps(analyst), "the analyst read the imported attempt"
    held = trajectory["messages"][:6]  # system, task, then 2 x (reply, observation)
    assert normalized(branch[:6]) == normalized(held)
    assert "b.txt needs 2." in branch[6]["content"]

    mini_files = subprocess.run(
        LISTING, shell=True, cwd=local, capture_output=True, text=True, check=True
    ).stdout
    workdir = sprout_shell(tmp_path / "run", "1:0", "pwd").strip()
    assert sprout_shell(tmp_path / "run", "1:2", f"cd {workdir} && {LISTING}") == mini_files
    assert sprout_shell(tmp_path / "run", "1:1", f"cat {workdir}/a.txt") == "1\n"

    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["tasks"][TWO_EDITS]["sprout"]["resolved"]
    run = RunFolder.open(tmp_path / "run")
    try:
        root, branched = run.tree.attempts(TWO_EDITS)
        assert (root.status, root.reward, root.kind) == ("submitted", 0.0, "root")
        assert (branched.parent_id, branched.boundary, branched.passed) == (1, 2, True)
        [rebuilt] = [entry.to_json() for entry in run.tree.meta().rebuilt]
        assert (rebuilt["calls"], rebuilt["diverged"]) == (3, None)
        [imported] = [entry.to_json() for entry in run.tree.meta().imported]
        assert imported["source"].endswith(f"{TWO_EDITS}.traj.json")
        actor_calls = [c for c in run.tree.model_calls(attempt_id=root.id) if c.role == "actor"]
        assert actor_calls == [], "no model call of the trajectory was made again"
    finally:
        run.close()


@pytest.mark.checkpoints_elsewhere("made by another tool, and they could not be rebuilt here")
def test_a_trajectory_whose_commands_exit_otherwise_is_restarted(
    tmp_path: Path, mini_swe_agent: object
) -> None:
    """A command that read a file only mini-swe-agent's folder had exits 1 in the task's
    sandbox: the adopted root cannot be trusted, ends `error` (lost, never a failed test)
    and a new root from checkpoint 0 takes its place, as for a checkpoint lost with its
    node."""
    require_host_image()
    two_edits_task(tmp_path / "tasks")
    mini_run(
        tmp_path, [text_reply("cat local.txt"), text_reply(f"echo {SENTINEL}")], extra_file=True
    )
    with ChatServer() as server:
        server.replies.extend([text_reply(f"echo {SENTINEL}")])
        assert sprout_run(tmp_path, server, "pass@1") == 0
    run = RunFolder.open(tmp_path / "run")
    try:
        adopted, fresh = run.tree.attempts(TWO_EDITS)
    finally:
        run.close()
    assert (adopted.status, adopted.fault, adopted.reward) == ("error", "lost", None)
    assert "turn 1: `cat local.txt` exited 1, recorded as exited 0" in adopted.end_reason
    assert (fresh.restarts, fresh.status, fresh.reward) == (adopted.id, "submitted", 0.0)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            {"messages": [], "trajectory_format": "mini-swe-agent-1.1", "instance_id": "nope"},
            "instance_id: 'nope' is none of the run's tasks (two-edits)",
        ),
        (
            {"messages": [], "trajectory_format": "mini-swe-agent-1.0"},
            "trajectory_format: 'mini-swe-agent-1.0', expected 'mini-swe-agent-1.1' "
            "(mini-swe-agent 2.x)",
        ),
        (
            {"trajectory_format": "mini-swe-agent-1.1"},
            "messages: missing (not a mini-swe-agent trajectory)",
        ),
    ],
)
def test_a_trajectory_that_cannot_be_adopted_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: dict, said: str
) -> None:
    two_edits_task(tmp_path / "tasks")
    saved = tmp_path / "trajs" / f"{TWO_EDITS}.traj.json"
    saved.parent.mkdir()
    saved.write_text(json.dumps(content))
    with ChatServer() as server:
        assert sprout_run(tmp_path, server, "sprout") == BAD_INPUT
    error = capsys.readouterr().err
    assert error == f"sprout run: {saved}: {said}\n"
    assert not (tmp_path / "run").exists()
