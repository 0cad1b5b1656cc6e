"""No role reads what the paper's roles do not have: the task's reference solution and its
hidden tests. Canaries sit where only those hold them (a solution step no attempt played
before the roles ran, a comment of the hidden tests, a file beside them); every role
input and every starting turn is searched for them, for a served model and for the
oracles' heuristic roles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.roles import Analyst, Reviewer
from sprout.roles.touched import turn_files
from sprout.runfolder import RunFolder
from sprout.tasks import load_native
from tests.support.chat_server import ChatServer, Reply, completion_body
from tests.support.requirements import require_host_image
from tests.support.taskfolders import TRAPPED, two_edits_task

pytestmark = pytest.mark.sandbox

SOLUTION_CANARY = "canary-solution-4417"
TESTS_CANARY = "canary-tests-9023"


def canary_task(root: Path) -> Path:
    """The two-edit task with canaries in the correct step 2 (which the trapped root never
    plays) and in the hidden tests (a comment, and a file the verifier never prints)."""
    task = two_edits_task(root)
    solve = task / "solution" / "solve.sh"
    solve.write_text(
        solve.read_text().replace("echo 2 > b.txt\n", f"echo 2 > b.txt  # {SOLUTION_CANARY}\n")
    )
    test = task / "tests" / "test.sh"
    test.write_text(test.read_text() + f"# {TESTS_CANARY}\n")
    (task / "tests" / "expected.txt").write_text(f"{TESTS_CANARY}\n")
    return task


def assert_clean(text: str, where: str) -> None:
    for canary in (SOLUTION_CANARY, TESTS_CANARY):
        assert canary not in text, f"{where} carries {canary}"


def turn(command: str) -> Reply:
    return Reply(body=completion_body(f"Next.\n\n```bash\n{command}\n```", prompt_tokens=50))


def test_a_served_models_roles_never_read_the_solution_or_the_tests(tmp_path: Path) -> None:
    require_host_image()
    canary_task(tmp_path / "tasks")
    plan = {
        "branches": [{"parent": 1, "boundary": 1, "starting_turn": "Again.\n\n```bash\nls\n```"}]
    }
    analysis = {"why_failed": "b.txt is 3", "keep": "turn 1", "boundaries": [1]}
    with ChatServer() as server:
        server.replies.extend(
            [
                turn("echo 1 > a.txt"),
                turn("echo 3 > b.txt"),
                turn("echo SPROUT_SUBMIT"),
                Reply(body=completion_body(json.dumps(analysis))),
                Reply(body=completion_body(json.dumps(plan))),
                turn("echo 2 > b.txt"),
                turn("echo SPROUT_SUBMIT"),
            ]
        )
        args = ["run", str(tmp_path / "tasks"), "--model", "openai/m", "--base-url"]
        args += [server.base_url, "--method", "sprout", "--rounds", "1"]
        code = main([*args, "--out", str(tmp_path / "r")])
        requests = list(server.requests)
    assert code == 0 and len(requests) == 7
    for number, request in enumerate(requests):
        assert_clean(json.dumps(request), f"request {number}")


def test_the_heuristic_roles_of_the_oracles_never_read_them_either(tmp_path: Path) -> None:
    require_host_image()
    task = load_native(canary_task(tmp_path / "tasks"))
    out = tmp_path / "run"
    code = main(
        [
            "run",
            str(task.path),
            "--model",
            TRAPPED,
            "--method",
            "sprout,shepherd",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    run = RunFolder.open(out)
    tree = run.tree
    attempts = run.tree.attempts(task.id)
    roots = [a for a in attempts if a.kind == "root"]
    assert roots and all(a.reward == 0 for a in roots), "every root falls into the trap"
    for attempt in attempts:
        assert_clean(str(attempt.starting_turn or ""), f"attempt {attempt.id}'s starting turn")
    assert_clean(json.dumps(list(run.tree.analyses(task.id).values())), "the analyses")
    assert_clean(json.dumps(list(run.tree.reviews(task.id).values())), "the reviews")
    # What each role read: the prompts the heuristics were charged for, rebuilt by the roles.
    analyst, reviewer = Analyst(None, tree), Reviewer(None, tree)  # type: ignore[arg-type]
    supervisor = Reviewer(None, tree, reads_verifier=False)  # type: ignore[arg-type]
    for root in roots:
        files = turn_files(tree, root)
        assert_clean(analyst.prompt(task, root, files, tree.last_index(root)), "an analyst prompt")
        role = reviewer if root.method == "sprout" else supervisor
        analyses = run.tree.analyses(task.id)
        prompt = role.prompt(task, {root.id: root}, {root.id: tree.last_index(root)}, {}, [], 4)
        assert_clean(prompt, f"the {root.method} planner's prompt")
        assert root.method != "shepherd" or not analyses.get(root.id)
    run.close()
