"""`sprout run` against a real OpenAI-compatible server on loopback: the entropy schedule
branches where the model was least sure, and refuses clearly when it gets no log-probs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.runfolder import RunFolder
from tests.support.chat_server import ChatServer, Reply, completion_body
from tests.support.requirements import require_host_image
from tests.support.taskfolders import two_edits_task

SURE = [("x", -0.01, {"x": -0.01, "y": -5.0})]
UNSURE = [("x", -0.7, {"x": -0.7, "y": -0.7})]


def turn(command: str, logprobs: list | None = SURE) -> Reply:
    text = f"Next.\n\n```bash\n{command}\n```"
    return Reply(body=completion_body(text, logprobs=logprobs, prompt_tokens=50))


def run(server: ChatServer, tmp_path: Path, method: str) -> int:
    two_edits_task(tmp_path / "tasks")
    return main(
        [
            "run",
            str(tmp_path / "tasks"),
            "--model",
            "openai/test-model",
            "--base-url",
            server.base_url,
            "--method",
            method,
            "--rounds",
            "1",
            "--out",
            str(tmp_path / "run"),
        ]
    )


def test_entropy_resamples_the_least_certain_turn(tmp_path: Path) -> None:
    require_host_image()
    with ChatServer() as server:
        server.replies.extend(
            [
                turn("echo 9 > a.txt", UNSURE),  # the root's unsure, wrong first turn
                turn("echo 2 > b.txt"),
                turn("echo SPROUT_SUBMIT"),
                turn("echo 1 > a.txt"),  # the branch asks for turn 1 again
                turn("echo 2 > b.txt"),
                turn("echo SPROUT_SUBMIT"),
            ]
        )
        assert run(server, tmp_path, "entropy") == 0
        assert all(request.get("logprobs") for request in server.requests)
    content = json.loads((tmp_path / "run" / "results.json").read_text())
    assert content["methods"]["entropy"]["resolved"] == 1
    assert content["methods"]["entropy"]["tokens"]["estimated"] is False
    assert content["methods"]["entropy"]["turns_reused"] == 0
    assert content["methods"]["entropy"]["attempts"] == 2


def test_entropy_without_logprobs_is_an_error_naming_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    with ChatServer() as server:
        server.replies.extend([turn("echo 9 > a.txt", None), turn("echo SPROUT_SUBMIT", None)])
        assert run(server, tmp_path, "entropy") == 1
    content = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "returned no log-probabilities" in content["tasks"]["two-edits"]["entropy"]["error"]
    assert "test-model" in capsys.readouterr().out


def test_pass_at_k_with_real_usage(tmp_path: Path) -> None:
    require_host_image()
    with ChatServer() as server:
        server.replies.extend(
            [turn("echo 1 > a.txt"), turn("echo 2 > b.txt"), turn("echo SPROUT_SUBMIT")]
        )
        assert run(server, tmp_path, "pass@1") == 0
    summary = json.loads((tmp_path / "run" / "results.json").read_text())["methods"]["pass@1"]
    assert summary["resolved"] == 1 and summary["pass_at_1"] == 1.0
    assert summary["tokens"] == {"spent": 3 * 53, "prefix_once": 50 + 3 * 3, "estimated": False}


def json_reply(content: dict) -> Reply:
    return Reply(body=completion_body(json.dumps(content), prompt_tokens=400, completion_tokens=40))


def test_sprout_with_a_served_analyst_and_reviewer(tmp_path: Path) -> None:
    """The whole loop over HTTP: a failed root, the analyst's and the reviewer's JSON, and a
    guided branch that keeps the root's good first turn and replaces its second."""
    require_host_image()
    with ChatServer() as server:
        server.replies.extend(
            [
                turn("echo 1 > a.txt"),
                turn("echo 9 > b.txt"),
                turn("echo SPROUT_SUBMIT"),
                json_reply({"why_failed": "turn 2 wrote 9", "keep": "turn 1", "boundaries": [1]}),
                json_reply(
                    {
                        "branches": [
                            {
                                "parent": 1,
                                "boundary": 1,
                                "starting_turn": "b.txt needs 2.\n\n```bash\necho 2 > b.txt\n```",
                                "reason": "turn 2 wrote the wrong number",
                            }
                        ]
                    }
                ),
                turn("echo SPROUT_SUBMIT"),
            ]
        )
        assert run(server, tmp_path, "sprout") == 0
        roles = [r["messages"][-1]["content"] for r in server.requests[3:5]]
    branch_context = json.dumps(server.requests[5]["messages"])
    assert "b.txt needs 2." in branch_context, "the starting turn is an ordinary turn"
    assert "wrote 9" not in branch_context and "wrong number" not in branch_context
    assert "echo 9 > b.txt" in roles[0]
    content = json.loads((tmp_path / "run" / "results.json").read_text())
    summary = content["methods"]["sprout"]
    assert summary["resolved"] == 1 and summary["attempts"] == 2
    assert summary["turns_reused"] == 1
    assert summary["tokens"]["spent"] == 3 * 53 + 2 * 440 + 53


def test_roles_settings_reach_the_roles(tmp_path: Path) -> None:
    """With `max_retries = 0`, one invalid reply each sends both roles to their heuristics:
    the analyst's boundary before the latest edit, and an unguided branch there."""
    require_host_image()
    config = tmp_path / "settings.toml"
    config.write_text("[roles]\nmax_retries = 0\n")
    with ChatServer() as server:
        server.replies.extend(
            [
                turn("echo 1 > a.txt"),
                turn("echo 9 > b.txt"),
                turn("echo SPROUT_SUBMIT"),
                json_reply({"why": "not the schema"}),
                json_reply({"plans": "not the schema"}),
                turn("echo 2 > b.txt"),
                turn("echo SPROUT_SUBMIT"),
            ]
        )
        two_edits_task(tmp_path / "tasks")
        code = main(
            [
                "run",
                str(tmp_path / "tasks"),
                "--model",
                "openai/test-model",
                "--base-url",
                server.base_url,
                "--method",
                "sprout",
                "--rounds",
                "1",
                "--config",
                str(config),
                "--out",
                str(tmp_path / "run"),
            ]
        )
        assert code == 0 and len(server.requests) == 7
    run = RunFolder.open(tmp_path / "run")
    (analysis,) = run.tree.analyses("two-edits").values()
    assert analysis["source"] == "heuristic" and analysis["boundaries"][0] == 1
    review = run.tree.reviews("two-edits")[("sprout", 1)]
    assert review["source"] == "heuristic"
    branch = run.tree.attempts("two-edits")[1]
    assert (branch.boundary, branch.guided, branch.reward) == (1, True, 1.0)
    assert branch.starting_turn is not None and "reward 0" in branch.starting_turn
    run.close()
