"""The reviewer against a real chat server: plans, the problems a retry names, the recorded
heuristic fallback, history of earlier branches, and resume."""

from __future__ import annotations

import json

import pytest

from sprout.models import ModelError
from sprout.roles import Analysis, BranchPlan, Review, Reviewer, RoleError
from sprout.roles.heuristics import warning_turn
from sprout.tree import Attempt
from tests.support.chat_server import ChatServer, Reply
from tests.support.role_inputs import answer, calls, finish, model_for, task_for
from tests.support.scripted_model import ScriptedModel, bash, submit
from tests.support.world import World

pytestmark = pytest.mark.sandbox

FIX = "The multiplier is wrong; restore it.\n\n```bash\nsed -i 's/x \\* 3/x * 2/' src/util.py\n```"
LOOK = "Let me read the tests' target first.\n\n```bash\ncat src/util.py\n```"


def plan(parent: int, boundary: int, turn: str = FIX, reason: str = "fix util") -> dict:
    return {"parent": parent, "boundary": boundary, "starting_turn": turn, "reason": reason}


def failed_root(world: World) -> Attempt:
    """A root that breaks src/util.py in turn 2 (boundaries 0..3)."""
    attempt, _ = world.play(
        [bash("cat README"), bash("sed -i 's/x \\* 2/x * 3/' src/util.py"), submit()]
    )
    return finish(world, attempt)


def analysis_of(attempt: Attempt, *boundaries: int) -> Analysis:
    return Analysis(attempt.id, "turn 2 broke double()", "reading the README", boundaries, "model")


def review(
    world: World, server: ChatServer, candidates: list[Attempt], branches: int = 2, round: int = 1
) -> Review:
    reviewer = Reviewer(model_for(server.base_url), world.tree)
    analyses = {a.id: analysis_of(a, 1, 0) for a in candidates}
    return reviewer.review(
        task_for(world),
        method="sprout",
        round=round,
        branches=branches,
        candidates=candidates,
        analyses=analyses,
    )


def test_a_valid_plan_is_stored_with_the_reviewers_tokens(world: World, server: ChatServer):
    root = failed_root(world)
    server.replies.append(answer({"branches": [plan(root.id, 1), plan(root.id, 0, LOOK)]}))
    result = review(world, server, [root])

    assert result == Review(
        (
            BranchPlan(root.id, 1, FIX, "fix util"),
            BranchPlan(root.id, 0, LOOK, "fix util"),
        ),
        "model",
    )
    assert world.tree.reviews("t1") == {("sprout", 1): result.to_json()}
    [call] = calls(world, "reviewer")
    assert (call.attempt_id, call.turn_index, call.method) == (None, None, "sprout")
    assert (call.prompt_tokens, call.completion_tokens, call.estimated) == (100, 20, False)
    prompt = server.requests[0]["messages"][0]["content"]
    assert f"### Attempt {root.id}: a root, reward 0 (submitted)" in prompt
    assert "- why it failed: turn 2 broke double()" in prompt
    assert "- suggested boundaries, best first: 1, 0" in prompt
    assert "changed /workspace/src/util.py" in prompt
    assert 'exactly 2 entries in "branches"' in prompt
    assert "(none yet)" in prompt


@pytest.mark.parametrize(
    ("branches", "problem"),
    [
        (
            lambda root: [plan(9999, 1), plan(root, 1)],
            "branches[0].parent: attempt 9999 does not exist; choose one of {root}",
        ),
        (
            lambda root: [plan(root, 14), plan(root, 1)],
            "branches[0].boundary: boundary 14 out of range for attempt {root} (0..3)",
        ),
        (
            lambda root: [plan(root, 1, "I would fix the multiplier."), plan(root, 0)],
            "branches[0].starting_turn: the reply runs no command",
        ),
        (
            lambda root: [plan(root, 1, bash("a", "b", "c", "d", "e")), plan(root, 0)],
            "the reply runs 5 commands; at most 4 per turn",
        ),
        (lambda root: [plan(root, 1)], "branches: the reply plans 1; plan exactly 2"),
        (
            lambda root: [plan(root, 1), plan(root, 1, FIX.replace("restore", "put back"))],
            "branches[1] repeats branches[0]",
        ),
        (
            lambda root: [plan(root, 1), {"parent": root, "boundary": 0}],
            "branches[1].starting_turn: missing (required)",
        ),
        (
            lambda root: [plan(root, 1), plan(str(root), 0)],
            "branches[1].parent: Input should be a valid integer",
        ),
        (lambda root: {"plans": []}, "branches: missing (required)"),
        (
            lambda root: [plan(root, 1), plan(root, 0, "x" * 9000)],
            "String should have at most 8000 characters",
        ),
    ],
)
def test_adversarial_plans_are_refused_with_what_was_wrong(
    world: World, server: ChatServer, branches, problem: str
):
    root = failed_root(world)
    body = branches(root.id)
    bad = body if isinstance(body, dict) else {"branches": body}
    server.replies.extend([answer(bad), answer({"branches": [plan(root.id, 1), plan(root.id, 0)]})])
    result = review(world, server, [root])

    assert result.source == "model" and [p.boundary for p in result.plans] == [1, 0]
    retry = server.requests[1]["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert problem.format(root=root.id) in retry[2]["content"]


def test_a_parent_of_another_task_or_not_a_candidate_is_refused(world: World, server: ChatServer):
    root = failed_root(world)
    world.tree.add_task("t2", {})
    other = world.tree.root("t2", [], world.base)
    server.replies.extend(
        [
            answer({"branches": [plan(other.id, 0)]}),
            answer({"branches": [plan(root.id, 1)]}),
        ]
    )
    result = review(world, server, [root], branches=1)
    assert result.source == "model"
    assert (
        f"attempt {other.id} belongs to another task; choose one of {root.id}"
        in (server.requests[1]["messages"][2]["content"])
    )


def test_extra_plans_are_dropped(world: World, server: ChatServer):
    root = failed_root(world)
    server.replies.append(answer({"branches": [plan(root.id, b) for b in (1, 0, 2)], "x": 1}))
    result = review(world, server, [root])
    assert [p.boundary for p in result.plans] == [1, 0]


def test_a_repeat_of_a_failed_branch_is_refused_and_history_is_shown(
    world: World, server: ChatServer
):
    root = failed_root(world)
    earlier = world.tree.branch(root, 1, FIX, round=1, method="sprout")
    earlier = finish(world, world.actor(ScriptedModel([submit()])).run(earlier))
    other_method = world.tree.branch(root, 0, LOOK, round=1, method="pass@k")
    server.replies.extend(
        [
            answer({"branches": [plan(root.id, 1, "Again.\n\n" + FIX.split("\n\n")[1])]}),
            answer({"branches": [plan(earlier.id, 1, LOOK)]}),
        ]
    )
    result = review(world, server, [root, earlier], branches=1, round=2)
    assert result.plans == (BranchPlan(earlier.id, 1, LOOK, "fix util"),)
    problem = server.requests[1]["messages"][2]["content"]
    assert f"branches[0] repeats branch {earlier.id} (attempt {root.id}, boundary 1" in problem
    prompt = server.requests[0]["messages"][0]["content"]
    assert f"- attempt {earlier.id} (round 1): from attempt {root.id} at boundary 1" in prompt
    assert "    The multiplier is wrong; restore it." in prompt
    assert f"Turns 1..1 are attempt {root.id}'s (listed there)" in prompt
    assert f"attempt {other_method.id} " not in prompt  # another method's branches are not history


def test_always_invalid_falls_back_to_heuristic_plans(world: World, server: ChatServer):
    root = failed_root(world)
    server.replies.extend([answer("Branch from turn 1.")] * 3)
    result = review(world, server, [root], branches=3)

    assert result.source == "heuristic"
    assert result.fallback_reason is not None
    assert result.fallback_reason.startswith("3 replies refused (max_retries=2)")
    assert [(p.parent_id, p.boundary) for p in result.plans] == [
        (root.id, 1),
        (root.id, 0),
        (root.id, 1),
    ]
    assert all(
        p.starting_turn == warning_turn(root.diagnostics, "/workspace") for p in result.plans
    )
    assert len(calls(world, "reviewer")) == 3
    assert Review.from_json(world.tree.reviews("t1")[("sprout", 1)]) == result


def test_an_unknown_model_is_a_fault_not_a_fallback(world: World, server: ChatServer):
    root = failed_root(world)
    server.replies.append(Reply(status=404, body={"error": {"message": "no such model"}}))
    with pytest.raises(ModelError) as raised:
        review(world, server, [root], branches=1)
    assert raised.value.kind == "unknown_model"
    assert world.tree.reviews("t1") == {}
    assert calls(world, "reviewer") == []


def test_a_huge_reply_is_refused_unread_and_echoed_cut(world: World, server: ChatServer):
    root = failed_root(world)
    huge = json.dumps({"branches": [plan(root.id, 1, FIX, "r" * 100_000)]})
    server.replies.extend([answer(huge), answer({"branches": [plan(root.id, 1)]})])
    result = review(world, server, [root], branches=1)
    assert result.source == "model"
    retry = server.requests[1]["messages"]
    assert "characters long" in retry[2]["content"] and len(retry[1]["content"]) < 4_100


def test_a_stored_review_is_returned_without_calling_the_model(world: World, server: ChatServer):
    root = failed_root(world)
    server.replies.append(answer({"branches": [plan(root.id, 1)]}))
    first = review(world, server, [root], branches=1)
    assert review(world, server, [root], branches=1) == first
    assert len(server.requests) == 1


def test_bad_requests_are_refused_before_any_call(world: World, server: ChatServer):
    root = failed_root(world)
    with pytest.raises(RoleError, match="no failed attempt to branch from"):
        review(world, server, [])
    with pytest.raises(RoleError, match="branches: expected 1 or more"):
        review(world, server, [root], branches=0)
    world.tree.add_task("t2", {})
    other = world.tree.root("t2", [], world.base)
    with pytest.raises(RoleError, match=r"are not attempts of task 't1'"):
        review(world, server, [root, other])
    assert server.requests == []
