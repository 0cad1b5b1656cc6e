"""The actor loop on a real sandbox with a scripted model: calls, format errors, submit, limits."""

from __future__ import annotations

import json
import math

import pytest

from sprout.agent import ActorConfig
from sprout.models import ModelError, TokenLogprob, ToolCall
from sprout.sandbox import Limits
from sprout.tree import Attempt
from tests.support.scripted_model import (
    FakeClock,
    ScriptedModel,
    SlowModel,
    WindowedModel,
    bash,
    reply,
    submit,
)
from tests.support.world import World, make_world

pytestmark = pytest.mark.sandbox


def observation(world: World, attempt: Attempt, index: int) -> str:
    """The text of the user message that turn `index` appended after its reply."""
    (turn,) = [t for t in world.tree.own_turns(attempt) if t.index == index]
    assert [m["role"] for m in turn.messages] == ["assistant", "user"]
    return turn.messages[1]["content"]


def test_several_blocks_run_in_order_into_one_observation(world):
    text = (
        "I will look around.\n\n```bash\necho first\n```\nthen write\n"
        "```sh\nprintf 'one\\ntwo\\n' > notes\n```\n```\ncat notes\n```\n"
    )
    attempt, model = world.play([text, submit()])

    assert attempt.status == "submitted"
    first = world.tree.own_turns(attempt)[0]
    assert [call.command for call in first.calls] == [
        "echo first",
        "printf 'one\\ntwo\\n' > notes",
        "cat notes",
    ]
    assert [call.output for call in first.calls] == ["first\n", "", "one\ntwo\n"]
    assert first.messages[0] == {"role": "assistant", "content": text}
    content = observation(world, attempt, 1)
    # one observation, calls in the order the reply wrote them, each with its exit code
    assert content.index("[call 1]") < content.index("[call 2]") < content.index("[call 3]")
    assert "[call 1] exit code 0\nfirst" in content
    assert "[call 3] exit code 0\none\ntwo" in content
    # the second call of the model saw exactly that observation after its own reply
    assert model.seen[1][-2:] == list(first.messages)
    assert world.shell(first.checkpoint, "cat notes") == "one\ntwo\n"


@pytest.mark.parametrize("language", ["python", "diff", "text"])
def test_blocks_in_other_languages_are_shown_not_run(world, language):
    """A reply often shows a snippet or a patch before the command that applies it; only the
    shell blocks run, and the snippet's closing fence must not open a block of prose."""
    text = (
        f"The fix:\n\n```{language}\nprint('fixed')\n```\n\nNow apply it:\n\n"
        "```bash\necho applied > done\n```\n"
    )
    attempt, _ = world.play([text, submit()])
    first = world.tree.own_turns(attempt)[0]
    assert [call.command for call in first.calls] == ["echo applied > done"]
    assert world.shell(first.checkpoint, "cat done") == "applied\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("I think the bug is in app.py, no command needed.", "runs no command"),
        (bash(*[f"touch f{i}" for i in range(5)]), "5 commands"),
    ],
    ids=["no-call", "too-many-calls"],
)
def test_a_broken_reply_is_a_format_error_turn(world, text, problem):
    attempt, model = world.play(
        [bash("echo before > state"), text, submit()], ActorConfig(max_calls_per_turn=4)
    )

    assert attempt.status == "submitted"
    turns = world.tree.own_turns(attempt)
    assert [t.index for t in turns] == [1, 2, 3]
    broken = turns[1]
    assert broken.format_error is True
    assert broken.calls == ()
    assert turns[0].format_error is False
    # nothing ran: the filesystem half of checkpoint 2 is checkpoint 1
    assert broken.checkpoint == turns[0].checkpoint
    assert world.shell(broken.checkpoint, "cat state") == "before\n"
    assert broken.messages[0] == {"role": "assistant", "content": text}
    content = broken.messages[1]["content"]
    assert broken.messages[1]["role"] == "user"
    assert content.startswith("Format error:")
    assert problem in content
    assert "at most 4" in content or "1 and 4" in content
    # the model is told, and goes on from there
    assert model.seen[2][-1]["content"] == content


def test_a_format_error_counts_against_the_turn_limit(world):
    attempt, model = world.play(["no command", "still none"], ActorConfig(max_turns=2))
    assert attempt.status == "limit"
    assert len(world.tree.own_turns(attempt)) == 2
    assert len(model.seen) == 2


def test_submit_sentinel_ends_the_attempt(world):
    attempt, model = world.play([bash("echo work > done"), submit(), bash("echo never")])

    assert attempt.status == "submitted"
    assert "SPROUT_SUBMIT" in attempt.end_reason
    assert "2" in attempt.end_reason
    assert len(model.seen) == 2, "no call after the submitting turn"
    assert [t.index for t in world.tree.own_turns(attempt)] == [1, 2]
    # the submitting turn is committed with its checkpoint like any other
    last = world.tree.checkpoint(attempt)
    assert world.shell(last, "cat done") == "work\n"


def test_a_custom_sentinel_replaces_the_default(world):
    config = ActorConfig(submit_sentinel="ALL_DONE_42")
    attempt, model = world.play([submit(), bash("echo ALL_DONE_42")], config)

    assert attempt.status == "submitted"
    assert "ALL_DONE_42" in attempt.end_reason
    turns = world.tree.own_turns(attempt)
    assert len(turns) == 2, "the default sentinel means nothing under a custom one"
    # the model is told the sentinel it must print
    assert "echo ALL_DONE_42" in model.seen[0][0]["content"]
    assert "SPROUT_SUBMIT" not in model.seen[0][0]["content"]


def test_sentinel_counts_only_as_the_first_line_of_output(world):
    """ActorConfig.submit_sentinel: "A call whose output's first line is this ends the attempt".

    A call that merely prints the sentinel later on (a grep of the prompt, a log) is work in
    progress, not a submission.
    """
    attempt, _ = world.play([bash("echo checking; echo SPROUT_SUBMIT"), submit()])
    assert attempt.status == "submitted"
    assert len(world.tree.own_turns(attempt)) == 2, "turn 1 was taken for a submission"


def test_turn_limit(world):
    attempt, model = world.play(
        [bash(f"echo {i} >> log") for i in range(5)], ActorConfig(max_turns=3)
    )
    assert attempt.status == "limit"
    assert "turn limit" in attempt.end_reason
    assert "3" in attempt.end_reason
    assert len(world.tree.own_turns(attempt)) == 3
    assert len(model.seen) == 3


def test_token_limit(world):
    # 120 tokens a call: 240 after two calls is under 250, 360 after three is not
    script = [reply(bash("true"), prompt_tokens=100, completion_tokens=20) for _ in range(6)]
    attempt, model = world.play(script, ActorConfig(max_tokens=250))
    assert attempt.status == "limit"
    assert "token limit" in attempt.end_reason
    assert "360" in attempt.end_reason and "250" in attempt.end_reason
    assert len(model.seen) == 3
    assert world.tree.tokens(attempt_id=attempt.id).spent == 360


def test_context_limit(world):
    script = [
        reply(bash("true"), prompt_tokens=100, completion_tokens=10),
        reply(bash("true"), prompt_tokens=200, completion_tokens=10),
        reply(bash("true"), prompt_tokens=300, completion_tokens=10),
        reply(bash("true"), prompt_tokens=400, completion_tokens=10),
    ]
    attempt, model = world.play(script, ActorConfig(max_context_tokens=300))
    assert attempt.status == "limit"
    assert "context limit" in attempt.end_reason
    assert "310" in attempt.end_reason and "300" in attempt.end_reason
    assert len(model.seen) == 3


def windowed_script() -> list:
    return [reply(bash("true"), prompt_tokens=100 * n, completion_tokens=10) for n in (1, 2, 3, 4)]


def test_the_context_limit_is_the_models_window_when_none_is_set(world):
    model = WindowedModel(windowed_script(), tokens=300)
    actor = world.actor(model)
    attempt = actor.run(world.root(actor))
    assert attempt.status == "limit"
    assert attempt.end_reason == (
        "context limit (max_context_tokens unset: the model's context of 300 tokens "
        "(the script)): 310 of 300 tokens"
    )
    assert len(model.seen) == 3


def test_a_context_limit_that_is_set_wins_over_the_window(world):
    model = WindowedModel(windowed_script(), tokens=300)
    actor = world.actor(model, ActorConfig(max_context_tokens=200))
    attempt = actor.run(world.root(actor))
    assert attempt.end_reason == "context limit (max_context_tokens): 210 of 200 tokens"
    assert len(model.seen) == 2


def test_a_prompt_the_model_refuses_as_over_its_context_ends_at_its_limit(world):
    too_long = ModelError("context", "the prompt has 4355 tokens, more than the model's context")
    attempt, _ = world.play([bash("true"), too_long])
    assert (attempt.status, attempt.fault) == ("limit", None)
    assert attempt.end_reason == f"context limit: {too_long}"
    assert [t.index for t in world.tree.own_turns(attempt)] == [1]


def test_wall_time_limit(world):
    # The model takes 10.1 s of a fake clock over each reply and the calls take none of it: a
    # turn lasts exactly 10.1 s, so the second turn (never the first) passes the 20 s limit.
    clock = FakeClock()
    model = SlowModel([bash("true")] * 5, clock, seconds=10.1)
    actor = world.actor(model, ActorConfig(max_wall_s=20), clock=clock)
    attempt = actor.run(world.root(actor))

    assert attempt.status == "limit"
    assert len(model.seen) == 2
    assert [t.duration_s for t in world.tree.own_turns(attempt)] == pytest.approx([10.1, 10.1])
    # the reason says which limit was hit, like the other limits do ("N of LIMIT")
    assert attempt.end_reason == "wall-time limit (max_wall_s): 20.2 s of 20 s"


def test_the_wall_time_limit_counts_the_turns_before_a_resume(world):
    """A resumed attempt's time starts from its stored turns, whatever the new clock says."""
    config = ActorConfig(max_wall_s=20)
    first = SlowModel([bash("true")] * 2, FakeClock(), seconds=15)
    actor = world.actor(first, config, clock=first.clock)
    stopped = actor.run(world.root(actor), interrupted=lambda: len(first.seen) == 1)
    assert stopped.status == "running"

    second = SlowModel([bash("true")] * 2, FakeClock(now=1000.0), seconds=10)
    attempt = world.actor(second, config, clock=second.clock).run(stopped)

    assert len(second.seen) == 1, "15 s stored + 10 s played passes the limit after one call"
    assert attempt.end_reason == "wall-time limit (max_wall_s): 25.0 s of 20 s"


def test_observation_carries_exit_code_and_capped_output(overlay_store, tmp_path):
    world = make_world(overlay_store, tmp_path, limits=Limits(output_bytes=1000))
    attempt, _ = world.play(
        [bash("echo oops >&2; exit 3"), bash("seq 1 100000"), submit()],
        ActorConfig(call_timeout_s=30),
    )
    assert attempt.status == "submitted"
    failed, big, _ = world.tree.own_turns(attempt)
    assert failed.calls[0].exit_code == 3
    assert observation(world, attempt, 1) == "exit code 3\noops"

    (call,) = big.calls
    assert call.truncated is True
    assert len(call.output) < 1200
    content = observation(world, attempt, 2)
    assert content.startswith("exit code 0\n1\n2\n3\n")
    assert content.endswith("99999\n100000")
    assert "bytes of output cut" in content
    assert len(content) < 1200


def test_a_call_that_times_out_says_so(world):
    attempt, _ = world.play([bash("sleep 5"), submit()], ActorConfig(call_timeout_s=0.5))
    (call,) = world.tree.own_turns(attempt)[0].calls
    assert call.timed_out is True
    assert call.exit_code is None
    assert observation(world, attempt, 1).startswith("timed out after")


def test_tool_calls_mode(world):
    calls = (
        ToolCall("call_a", "bash", {"command": "echo alpha > a"}),
        ToolCall("call_b", "bash", {"command": "cat a"}),
    )
    done = (ToolCall("call_c", "bash", {"command": "echo SPROUT_SUBMIT"}),)
    model = ScriptedModel([reply("Writing a.", tool_calls=calls), reply("", tool_calls=done)])
    actor = world.actor(model, ActorConfig(call_format="tool_calls"))
    attempt = actor.run(world.root(actor))

    assert attempt.status == "submitted"
    assert model.calls[0]["tools"][0]["function"]["name"] == "bash"
    first = world.tree.own_turns(attempt)[0]
    assistant, *tools = first.messages
    assert assistant["role"] == "assistant"
    assert assistant["content"] == "Writing a."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_a", "call_b"]
    assert assistant["tool_calls"][0]["function"]["name"] == "bash"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
        "command": "echo alpha > a"
    }
    assert [(m["role"], m["tool_call_id"]) for m in tools] == [
        ("tool", "call_a"),
        ("tool", "call_b"),
    ]
    assert tools[0]["content"] == "exit code 0\n(no output)"
    assert tools[1]["content"] == "exit code 0\nalpha"
    assert model.seen[1][-3:] == list(first.messages)


def test_a_tool_call_to_another_tool_is_a_format_error(world):
    wrong = (ToolCall("call_x", "python", {"code": "print(1)"}),)
    done = (ToolCall("call_c", "bash", {"command": "echo SPROUT_SUBMIT"}),)
    model = ScriptedModel([reply("", tool_calls=wrong), reply("", tool_calls=done)])
    actor = world.actor(model, ActorConfig(call_format="tool_calls"))
    attempt = actor.run(world.root(actor))

    assert attempt.status == "submitted"
    broken = world.tree.own_turns(attempt)[0]
    assert broken.format_error is True
    assert broken.checkpoint == world.base
    content = broken.messages[-1]["content"]
    assert "Format error" in content and "'python'" in content
    # nothing in the context is left waiting for a tool result
    assert not any(m.get("tool_calls") for m in model.seen[1])


def test_entropy_is_recorded_when_logprobs_are_asked(world):
    half = math.log(0.5)
    tokens = (
        TokenLogprob("a", half, {"a": half, "b": half}),
        TokenLogprob("b", 0.0, {"b": 0.0}),
    )
    model = ScriptedModel([reply(submit(), logprobs=tokens)])
    actor = world.actor(model, ActorConfig(logprobs=True, temperature=0.7))
    attempt = actor.run(world.root(actor))

    assert model.calls[0]["logprobs"] is True
    assert model.calls[0]["temperature"] == 0.7
    (turn,) = world.tree.own_turns(attempt)
    assert turn.entropy == pytest.approx(math.log(2) / 2)


def test_a_finished_attempt_is_not_played_again(world):
    attempt, _ = world.play([submit()])
    model = ScriptedModel([])
    again = world.actor(model).run(attempt)
    assert again.status == "submitted"
    assert model.seen == []
    assert len(world.tree.own_turns(again)) == 1


def test_an_empty_turn_keeps_the_checkpoint(world):
    attempt, _ = world.play([bash("ls", "cat README"), submit()])
    first, second = world.tree.own_turns(attempt)
    assert first.checkpoint == world.base
    assert second.checkpoint == world.base
    assert first.calls[0].output == "README\nsrc\n"
