"""The oracles served by the heuristic roles: estimated tokens, starting turns made of the
verifier's findings alone, and the whole loop (actor, verifier, analyst, reviewer, branch)
with `oracle-noise`'s trap errors on a real sandbox."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from sprout.models.estimate import estimate_tokens
from sprout.models.oracle import Noise, OracleModel, OracleNoiseModel, Step, next_step
from sprout.roles import Analyst, Reviewer
from sprout.roles.touched import turn_files
from sprout.task import SolutionStep, Task
from sprout.tree import Attempt
from sprout.verify import run_verifier
from tests.support.role_inputs import calls
from tests.support.taskfolders import write_files
from tests.support.world import World

pytestmark = pytest.mark.sandbox

STEPS = [
    Step("mkdir -p pkg && touch pkg/__init__.py"),
    Step(
        "echo 'FACTOR = 2' > pkg/conf.py",
        wrong=("echo 'FACTOR = 3' > pkg/conf.py",),
        trap="echo 'FACTOR = 3' > pkg/conf.py",
        trap_names=("check.py",),  # the verifier's traceback names /tests/check.py
    ),
    Step("printf 'from pkg.conf import FACTOR\\ndouble = lambda x: x * FACTOR\\n' > pkg/calc.py"),
]
CHECK = """\
import sys
sys.path.insert(0, "/workspace")
from pkg.calc import double
value = double(2)
assert value == 4, value
print("ok")
"""


def make_task(world: World, tmp_path: Path) -> Task:
    tests = write_files(
        tmp_path / "tests", {"check.py": CHECK, "test.sh": "python3 /tests/check.py\n"}
    )
    return Task(
        id=world.task_id,
        path=tmp_path,
        instruction="Make pkg.calc.double(2) return 4.",
        workdir=world.workdir,
        solution=tuple(
            SolutionStep(command=s.command, wrong=s.wrong, trap=s.trap, trap_names=s.trap_names)
            for s in STEPS
        ),
        tests_dir=tests,
        results="exit-code",
        verifier_timeout_s=60,
    )


def verify(world: World, task: Task, attempt: Attempt) -> Attempt:
    verdict = run_verifier(task, world.layers, world.tree.checkpoint(attempt), world.base)
    world.tree.set_outcome(attempt.id, verdict.reward, verdict.diagnostics.to_json(), verdict.patch)
    return world.tree.attempt(attempt.id)


def test_the_loop_escapes_a_trap_from_the_verifiers_findings_alone(world: World, tmp_path):
    task = make_task(world, tmp_path)
    model = OracleNoiseModel(STEPS, noise=Noise(errors="trap", q=1, p=0))  # always falls in
    actor = world.actor(model)
    analyst = Analyst(model, world.tree)
    reviewer = Reviewer(model, world.tree)

    root = verify(world, task, actor.run(world.root(actor, task.instruction)))
    assert root.reward == 0 and "/tests/check.py" in json.dumps(root.diagnostics)
    analysis = analyst.analyse(task, root)
    assert analysis.source == "heuristic" and analysis.boundaries == (2, 1, 0)
    assert (
        analysis.fallback_reason
        == f"{model.name} replays a reference solution and writes no analyses or reviews"
    )
    review = reviewer.review(
        task, method="sprout", round=1, branches=2, candidates=[root],
        analyses={root.id: analysis},
    )  # fmt: skip
    assert [(plan.parent_id, plan.boundary) for plan in review.plans] == [
        (root.id, 2),
        (root.id, 1),
    ]
    for plan in review.plans:
        assert "/tests/check.py" in str(plan.starting_turn)
        assert not any(step.command in str(plan.starting_turn) for step in STEPS)
    late, early = (
        verify(world, task, actor.run(world.tree.branch(root, p.boundary, p.starting_turn)))
        for p in review.plans
    )
    assert late.reward == 0, "the trap lies in the prefix the branch keeps"
    assert early.reward == 1, "warned by the verifier's findings, the branch avoids the trap"

    # The roles were charged estimated tokens, like the oracle's own turns.
    charged = calls(world, "analyst") + calls(world, "reviewer")
    assert len(charged) == 2 and all(c.estimated for c in charged)
    assert [c.method for c in charged] == ["", "sprout"]  # as the attempts
    totals = world.tree.tokens(task_id=task.id)
    assert totals.estimated and totals.by_role["analyst"] > 0 and totals.by_role["reviewer"] > 0


def test_estimates_are_of_the_rendered_prompt_and_the_heuristics_json(world: World, tmp_path):
    task = make_task(world, tmp_path)
    model = OracleModel(STEPS[:1])  # does step 1 only: the check fails
    actor = world.actor(model)
    root = verify(world, task, actor.run(world.root(actor, task.instruction)))
    analyst = Analyst(model, world.tree)
    analysis = analyst.analyse(task, root)

    [call] = calls(world, "analyst")
    files = turn_files(world.tree, root)
    prompt = analyst.prompt(task, root, files, world.tree.last_index(root))
    assert call.prompt_tokens == estimate_tokens(prompt)
    reply = {"why_failed": analysis.why_failed, "keep": analysis.keep, "boundaries": [1, 0]}
    assert analysis.boundaries == (1, 0)
    assert call.completion_tokens == estimate_tokens(json.dumps(reply))
    assert (call.attempt_id, call.estimated, call.latency_s) == (root.id, True, 0.0)


def test_the_oracle_resumes_after_the_boundary_of_a_heuristic_starting_turn(world: World, tmp_path):
    task = make_task(world, tmp_path)
    actor = world.actor(OracleModel(STEPS))
    root = actor.run(world.root(actor, task.instruction))  # 3 steps and a submit: 0..4
    world.tree.set_outcome(root.id, 0.0, {"summary": "pretend it failed"}, "")
    root = world.tree.attempt(root.id)
    analysis = Analyst(OracleModel(STEPS), world.tree).analyse(task, root)
    analyses = {root.id: dataclasses.replace(analysis, boundaries=(0, 1, 2, 3))}
    review = Reviewer(OracleModel(STEPS), world.tree).review(
        task, method="sprout", round=1, branches=4, candidates=[root], analyses=analyses
    )
    for plan in review.plans:
        messages = world.tree.messages(root, plan.boundary)
        messages.append({"role": "assistant", "content": plan.starting_turn})
        assert next_step(messages, STEPS) == min(plan.boundary, len(STEPS)), plan
