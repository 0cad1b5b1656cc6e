"""The analyst against a real chat server: valid replies, retries that name the problem,
adversarial replies, the recorded heuristic fallback, bounded prompts and resume."""

from __future__ import annotations

import json

import pytest

from sprout.models import ModelError
from sprout.roles import Analysis, Analyst, RoleError
from sprout.roles.output import MAX_REPLY_CHARS
from sprout.tree import Attempt
from tests.support.chat_server import ChatServer, Reply, completion_body
from tests.support.role_inputs import answer, calls, finish, model_for, task_for
from tests.support.scripted_model import bash, submit
from tests.support.world import World

pytestmark = pytest.mark.sandbox

GOOD = {
    "why_failed": "Turn 2 multiplied by 3.",
    "keep": "Turn 1 read the README.",
    "boundaries": [1, 0],
}


def failed(world: World) -> Attempt:
    """A root that breaks src/util.py in turn 2, writes notes in turn 3, then submits."""
    attempt, _ = world.play(
        [
            bash("cat README", thought="Let me look around."),
            bash("sed -i 's/x \\* 2/x * 3/' src/util.py"),
            bash("echo notes > notes.txt"),
            submit(),
        ]
    )
    return finish(world, attempt)


def analyst(world: World, server: ChatServer, **options) -> Analyst:
    return Analyst(model_for(server.base_url), world.tree, **options)


def test_a_valid_reply_is_stored_and_its_tokens_recorded(world: World, server: ChatServer):
    attempt = failed(world)
    server.replies.append(answer(f"Here is my analysis.\n```json\n{json.dumps(GOOD)}\n```"))
    analysis = analyst(world, server).analyse(task_for(world), attempt)

    assert analysis == Analysis(attempt.id, GOOD["why_failed"], GOOD["keep"], (1, 0), "model")
    assert world.tree.analyses("t1") == {attempt.id: analysis.to_json()}
    [call] = calls(world, "analyst")
    assert (call.role, call.attempt_id, call.turn_index) == ("analyst", attempt.id, None)
    assert (call.prompt_tokens, call.completion_tokens, call.estimated) == (100, 20, False)

    prompt = server.requests[0]["messages"][0]["content"]
    assert "Make double() return twice its argument." in prompt
    assert "sed -i 's/x \\* 2/x * 3/' src/util.py" in prompt
    assert "Changed: /workspace/src/util.py" in prompt
    assert 'File "/workspace/src/util.py", line 2' in prompt
    assert "boundaries are 0..4" in prompt
    # the analysis never enters the actor's context: no turn was added anywhere
    assert [t.index for t in world.tree.path(attempt)] == [1, 2, 3, 4]
    assert GOOD["why_failed"] not in json.dumps(world.tree.messages(attempt))


def test_an_invalid_reply_is_retried_with_the_problem_named(world: World, server: ChatServer):
    attempt = failed(world)
    bad = {**GOOD, "boundaries": [14]}
    server.replies.extend([answer(bad), answer(GOOD)])
    analysis = analyst(world, server).analyse(task_for(world), attempt)

    assert analysis.source == "model" and analysis.boundaries == (1, 0)
    retry = server.requests[1]["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert retry[1]["content"] == json.dumps(bad)
    assert f"boundary 14 out of range for attempt {attempt.id} (0..4)" in retry[2]["content"]
    assert len(calls(world, "analyst")) == 2


def test_always_invalid_falls_back_to_the_heuristic_with_the_reason(
    world: World, server: ChatServer
):
    attempt = failed(world)
    server.replies.extend([answer("I cannot decide.")] * 3)
    analysis = analyst(world, server).analyse(task_for(world), attempt)

    assert analysis.source == "heuristic"
    assert analysis.boundaries == (1, 2, 0)  # before util.py's edit, the later edit, restart
    assert analysis.fallback_reason is not None
    assert analysis.fallback_reason.startswith("3 replies refused (max_retries=2)")
    assert "holds no JSON object" in analysis.fallback_reason
    assert "/workspace/src/util.py" in analysis.why_failed
    assert Analysis.from_json(world.tree.analyses("t1")[attempt.id]) == analysis
    assert len(calls(world, "analyst")) == 3
    assert world.tree.tokens(task_id="t1").by_role["analyst"] == 3 * 120


def test_a_model_error_falls_back_without_a_retry(world: World, server: ChatServer):
    attempt = failed(world)
    server.replies.append(Reply(status=400, body={"error": {"message": "context too long"}}))
    analysis = analyst(world, server).analyse(task_for(world), attempt)
    assert analysis.source == "heuristic"
    assert analysis.fallback_reason is not None
    assert "request refused on try 1" in analysis.fallback_reason
    assert "context too long" in analysis.fallback_reason
    assert len(server.requests) == 1
    assert calls(world, "analyst") == []


def test_fallbacks_are_told_with_their_reason(world: World, server: ChatServer):
    attempt = failed(world)
    server.replies.extend([Reply(body=completion_body("no json here"))] * 3)
    told: list[str] = []
    role = analyst(world, server)
    role.on_fallback = told.append
    analysis = role.analyse(task_for(world), attempt)
    assert told == [analysis.fallback_reason]
    assert "3 replies refused" in told[0]


def test_a_server_that_gives_no_reply_is_a_fault_not_a_fallback(world: World, server: ChatServer):
    attempt = failed(world)
    server.replies.append(Reply(status=401, body={"error": {"message": "bad key"}}))
    with pytest.raises(ModelError) as raised:
        analyst(world, server).analyse(task_for(world), attempt)
    assert raised.value.kind == "auth"
    assert world.tree.analyses("t1") == {}


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("The mistake is in turn 2; resume at 1.", "holds no JSON object"),
        ({"why_failed": "w", "boundaries": [1]}, "keep: missing (required)"),
        (
            {"why_failed": "w", "keep": "k", "boundaries": "1"},
            "boundaries: Input should be a valid list",
        ),
        (
            {"why_failed": 3, "keep": "k", "boundaries": [1]},
            "why_failed: Input should be a valid string",
        ),
        (
            {"why_failed": "w", "keep": "k", "boundaries": [1.5]},
            "boundaries[0]: Input should be a valid integer",
        ),
        (
            {"why_failed": "w", "keep": "k", "boundaries": []},
            "boundaries: List should have at least 1 item",
        ),
        ({"why_failed": "w", "keep": "k", "boundaries": [-1, 2]}, "boundary -1 out of range"),
        ("x" * (MAX_REPLY_CHARS + 10), "characters long"),
    ],
)
def test_adversarial_replies_are_refused_with_what_was_wrong(
    world: World, server: ChatServer, reply, problem: str
):
    attempt = failed(world)
    server.replies.extend([answer(reply), answer(GOOD)])
    analysis = analyst(world, server).analyse(task_for(world), attempt)
    assert analysis.source == "model"
    retry = server.requests[1]["messages"]
    assert problem in retry[-1]["content"]
    assert len(retry[1]["content"]) <= 4_100  # a huge reply is echoed back cut


def test_extra_fields_are_ignored_and_boundaries_deduplicated(world: World, server: ChatServer):
    attempt = failed(world)
    server.replies.append(answer({**GOOD, "boundaries": [1, 1, 0, 3, 2, 4, 1], "confidence": 0.9}))
    analysis = analyst(world, server).analyse(task_for(world), attempt)
    assert analysis.boundaries == (1, 0, 3, 2, 4)
    assert len(server.requests) == 1


def test_no_retries_means_one_call(world: World, server: ChatServer):
    attempt = failed(world)
    server.replies.append(answer("nothing"))
    analysis = analyst(world, server, max_retries=0).analyse(task_for(world), attempt)
    assert analysis.source == "heuristic" and len(server.requests) == 1


def test_a_stored_analysis_is_returned_without_calling_the_model(world: World, server: ChatServer):
    attempt = failed(world)
    server.replies.append(answer(GOOD))
    first = analyst(world, server).analyse(task_for(world), attempt)
    again = analyst(world, server).analyse(task_for(world), attempt)
    assert again == first and len(server.requests) == 1


def test_prompts_stay_bounded_for_huge_outputs_and_many_turns(world: World, server: ChatServer):
    noisy = "seq 1 20000 | sed 's/$/ of a very long build log/'"
    replies = [bash(noisy, thought="Build. " + "really " * 500) for _ in range(44)]
    attempt, _ = world.play([*replies, submit()])
    attempt = finish(world, attempt)
    huge = {**attempt.diagnostics, "log_tail": "L" * 100_000}
    huge["tests"] = [
        {"name": f"t{n}", "outcome": "failed", "message": "E" * 50_000} for n in range(50)
    ]
    world.tree.set_outcome(attempt.id, 0.0, huge, "+" * 200_000)
    server.replies.append(answer(GOOD))
    analyst(world, server).analyse(task_for(world), world.tree.attempt(attempt.id))

    prompt = server.requests[0]["messages"][0]["content"]
    assert len(prompt) < 80_000
    assert "20000 of a very long build log" in prompt  # an output keeps its tail
    assert "### Turn 45" in prompt and "- turn 1:" in prompt  # early turns are brief
    assert "(+38 more failing tests)" in prompt


def test_the_attempt_must_have_ended_and_been_verified(world: World, server: ChatServer):
    root = world.root(world.actor(None))
    with pytest.raises(RoleError, match="still running"):
        analyst(world, server).analyse(task_for(world), root)
    world.tree.finish_attempt(root.id, "limit", "turn limit")
    with pytest.raises(RoleError, match="no stored diagnostics; run the verifier"):
        analyst(world, server).analyse(task_for(world), root)
    assert server.requests == []
