"""The roles' prompts fit the model's window: attempts whose histories are far over it are
shown newest first and briefer, the reviewer keeps every analysis, and a prompt that
cannot fit even at its briefest is a fallback with its reason, never an error.

The model is scripted, with a small window and a tokenizer that counts words; the
attempts are long failed ones in a real store (tests/support/long_attempts.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.models import ModelError
from sprout.roles import Analysis, Analyst, Reviewer
from sprout.tree import Attempt
from tests.support.long_attempts import METHOD, LongAttempts, last_line
from tests.support.scripted_model import ScriptedModel, WindowedModel

ANALYSIS = {"why_failed": "Turn 3 broke the build.", "keep": "Turns 1-2.", "boundaries": [2]}
PLAN = {
    "branches": [{"parent": 1, "boundary": 2, "starting_turn": "Rebuild.\n\n```bash\nmake\n```"}]
}


@pytest.fixture
def long(tmp_path: Path) -> LongAttempts:
    return LongAttempts(tmp_path)


def sent(model: ScriptedModel) -> str:
    """The one prompt the role sent `model` first."""
    [message] = model.seen[0]
    return str(message["content"])


def words(model: WindowedModel, prompt: str) -> int:
    return model.count_tokens([{"role": "user", "content": prompt}])


def test_the_analysts_prompt_fits_and_keeps_its_newest_turn_in_full(long: LongAttempts):
    attempt = long.root(turns=100)
    model = WindowedModel([json.dumps(ANALYSIS)], tokens=2_000, reply_tokens=200)
    analysis = Analyst(model, long.tree).analyse(long.task, attempt)

    prompt = sent(model)
    unbudgeted = Analyst(ScriptedModel([]), long.tree).prompt(long.task, attempt, {}, 100)
    assert words(model, unbudgeted) > 5 * 2_000, "the attempt is far over the window"
    assert words(model, prompt) <= 2_000 - 200
    assert "### Turn 100" in prompt and last_line(attempt, 100) in prompt
    assert "### Turn 99" not in prompt and "- turn 99: `make build" in prompt
    assert "(turns 1.." in prompt and "are not listed)" in prompt
    assert analysis.source == "model" and analysis.boundaries == (2,)


def test_a_window_the_full_prompt_fits_gets_the_full_prompt(long: LongAttempts):
    attempt = long.root(turns=3, lines=5)
    model = WindowedModel([json.dumps(ANALYSIS)], tokens=200_000)
    Analyst(model, long.tree).analyse(long.task, attempt)
    unbudgeted = Analyst(ScriptedModel([]), long.tree).prompt(long.task, attempt, {}, 3)
    assert sent(model) == unbudgeted


def candidates(long: LongAttempts) -> tuple[list[Attempt], dict[int, Analysis]]:
    """Two long roots and a long branch, each with an analysis that names it, and twenty
    earlier failed branches in the history."""
    first, second = long.root(turns=100), long.root(turns=80)
    third = long.branch(first, 50, turns=40)
    for boundary in range(20):
        long.branch(second, boundary, turns=1, lines=2)
    analyses = {
        a.id: Analysis(
            a.id, f"attempt {a.id} failed at turn {a.boundary + 7}", "its start", (2,), "model"
        )
        for a in (first, second, third)
    }
    return [first, second, third], analyses


def review(long: LongAttempts, model, parents, analyses, **options):
    return Reviewer(model, long.tree, **options).review(
        long.task, method=METHOD, round=2, branches=1, candidates=parents, analyses=analyses
    )


def test_the_reviewers_prompt_fits_and_keeps_every_analysis(long: LongAttempts):
    parents, analyses = candidates(long)
    model = WindowedModel([json.dumps(PLAN)], tokens=3_000, reply_tokens=300)
    planned = review(long, model, parents, analyses)

    prompt = sent(model)
    assert words(model, prompt) <= 3_000 - 300
    for attempt in parents:
        assert f"### Attempt {attempt.id}:" in prompt
        assert analyses[attempt.id].why_failed in prompt
    newest = {attempt.id: long.tree.last_index(attempt) for attempt in parents}
    assert all(f"- turn {n}: `make build" in prompt for n in newest.values())
    assert "earlier branches are not listed" in prompt
    assert planned.source == "model"


def test_a_prompt_that_cannot_fit_is_a_fallback_with_its_reason(long: LongAttempts):
    told: list[str] = []
    attempt = long.root(turns=30)
    model = WindowedModel([], tokens=600, reply_tokens=300)
    analysis = Analyst(model, long.tree, on_fallback=told.append).analyse(long.task, attempt)

    assert analysis.source == "heuristic" and analysis.boundaries
    reason = analysis.fallback_reason or ""
    assert reason.startswith("the analyst's prompt has ")
    assert reason.endswith(
        "tokens at its briefest, over its budget of 300 tokens (the model's context of 600 "
        "tokens (the script) less 300 for the reply)"
    )
    assert told == [reason] and model.seen == []
    assert long.tree.analyses(long.task.id)[attempt.id]["fallback_reason"] == reason

    parents, analyses = candidates(long)
    planned = review(long, model, parents, analyses, on_fallback=told.append)
    assert planned.source == "heuristic" and len(planned.plans) == 1
    assert (planned.fallback_reason or "").startswith("the reviewer's prompt has ")
    assert model.seen == []


def test_a_prompt_the_model_refuses_as_over_its_context_is_a_fallback(long: LongAttempts):
    attempt = long.root(turns=2, lines=5)
    too_long = ModelError("context", "the prompt has 5000 tokens, more than the model's context")
    analysis = Analyst(ScriptedModel([too_long]), long.tree).analyse(long.task, attempt)
    assert analysis.source == "heuristic"
    assert analysis.fallback_reason == f"request refused on try 1: {too_long}"
