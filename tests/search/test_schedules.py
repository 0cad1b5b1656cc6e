"""Every schedule end to end on a two-edit task: the tree's shape, the stop at the first
pass, the token totals. The oracle models make the outcomes exact: p=0 never errs, p=1
errs at every step it plays; with trap errors at q=1 (and p=0) every attempt falls into
step 2's trap unless a turn in its context names what the verifier named (b.txt)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from sprout.models.resolve import ModelSpec
from sprout.runfolder import RunFolder
from sprout.search import Progress, RunSettings, parse_methods, run_tasks
from sprout.search.runner import RunSettingsError, check_settings
from sprout.tasks import load_native
from sprout.tree import Attempt
from tests.support.requirements import require_host_image
from tests.support.taskfolders import TRAPPED, two_edits_task


def run_methods(
    tmp_path: Path, model: str, methods: str, *, workers: int = 2, **options: object
) -> tuple[RunFolder, dict, str]:
    require_host_image()
    task = load_native(two_edits_task(tmp_path / "tasks"))
    run = RunFolder.create_new(tmp_path / "run")
    settings = RunSettings(
        ModelSpec.parse(model), parse_methods(methods, **options), workers=workers
    )
    out = io.StringIO()
    content = run_tasks([task], run, settings, Progress(out))
    return run, content, out.getvalue()


def attempts(run: RunFolder, method: str) -> list[Attempt]:
    return [a for a in run.tree.attempts("two-edits") if a.method == method]


def test_pass_at_k_plays_every_root_and_reports_the_mean(tmp_path: Path) -> None:
    run, content, _ = run_methods(tmp_path, "oracle-noise:p=1", "pass@3")
    roots = attempts(run, "pass@3")
    assert [a.kind for a in roots] == ["root"] * 3
    assert all(a.reward == 0.0 and a.status == "submitted" for a in roots)
    summary = content["methods"]["pass@3"]
    assert summary["resolved"] == 0 and summary["pass_at_1"] == 0.0
    assert summary["attempts"] == 3
    assert summary["turns_executed"] == 9  # two steps and the submission, three times
    assert summary["turns_reused"] == 0
    spent = sum(c.prompt_tokens + c.completion_tokens for c in run.tree.model_calls())
    assert summary["tokens"]["spent"] == spent > 0
    assert summary["tokens"]["estimated"] is True
    assert content["tasks"]["two-edits"]["pass@3"]["resolved"] is False


def test_sprout_stops_when_its_root_passes(tmp_path: Path) -> None:
    run, content, log = run_methods(tmp_path, "oracle-noise:p=0", "sprout")
    (root,) = attempts(run, "sprout")
    assert root.kind == "root" and root.reward == 1.0
    assert run.tree.analyses("two-edits") == {} and run.tree.reviews("two-edits") == {}
    assert content["methods"]["sprout"]["resolved"] == 1
    assert "PASS" in log and "resolved" in log


def test_sprout_branches_from_before_the_mistake_and_stops_at_the_first_pass(
    tmp_path: Path,
) -> None:
    run, content, _ = run_methods(tmp_path, TRAPPED, "sprout", rounds=(4, 3))
    found = attempts(run, "sprout")
    root, branches = found[0], found[1:]
    assert root.kind == "root" and root.reward == 0.0
    assert {b.round for b in branches} == {1}, "a pass in round 1 ends the search"
    assert len(branches) == 4
    assert all(b.parent_id == root.id and b.guided for b in branches)
    assert all("/workspace/b.txt" in str(b.starting_turn) for b in branches)
    assert [b.boundary for b in branches] == [1, 0, 1, 0]  # before the turn that wrote b.txt
    winners = [b for b in branches if b.reward == 1.0]
    assert winners and {b.boundary for b in winners} <= {0, 1}
    assert all(b.status in ("submitted", "stopped") for b in branches)
    assert set(run.tree.analyses("two-edits")) == {root.id}
    assert ("sprout", 1) in run.tree.reviews("two-edits")

    summary = content["methods"]["sprout"]
    assert summary["resolved"] == 1 and summary["pass_at_1"] == 0.0
    assert summary["turns_reused"] == sum(
        b.boundary for b in branches if b.status != "stopped" or run.tree.own_turns(b)
    )
    tokens = run.tree.tokens(task_id="two-edits", method="sprout")
    assert {"actor", "analyst", "reviewer"} <= set(tokens.by_role)
    assert summary["tokens"]["spent"] == tokens.spent
    assert summary["tokens"]["prefix_once"] == tokens.prefix_once < tokens.spent


def test_methods_on_one_task_are_counted_apart(tmp_path: Path) -> None:
    run, content, _ = run_methods(tmp_path, TRAPPED, "pass@2,sprout")
    by_method = content["tasks"]["two-edits"]
    assert by_method["pass@2"]["attempts"] == 2
    assert by_method["pass@2"]["resolved"] is False, "fresh attempts repeat the trap"
    assert by_method["sprout"]["resolved"] is True
    total = sum(c.prompt_tokens + c.completion_tokens for c in run.tree.model_calls())
    spent = [content["methods"][m]["tokens"]["spent"] for m in ("pass@2", "sprout")]
    assert sum(spent) == total
    assert {s["method"] for s in run.tree.schedules()} == {"pass@2", "sprout"}
    assert all(s["status"] == "done" and s["wall_s"] > 0 for s in run.tree.schedules())


def test_entropy_refuses_a_model_without_logprobs() -> None:
    settings = RunSettings(ModelSpec.parse("oracle"), parse_methods("entropy"))
    with pytest.raises(RunSettingsError, match="needs per-token log-probabilities"):
        check_settings(settings)


def test_with_one_worker_a_pass_stops_the_branches_not_yet_started(tmp_path: Path) -> None:
    run, content, log = run_methods(tmp_path, TRAPPED, "sprout", workers=1)
    branches = attempts(run, "sprout")[1:]
    outcomes = [(b.boundary, b.status, b.reward) for b in branches]
    # The verifier names b.txt, which turn 2 wrote: the analyst's fallback puts boundary 1
    # first, then 0; the reviewer cycles through them and the branches run in that order.
    assert outcomes == [
        (1, "submitted", 1.0),
        (0, "stopped", None),
        (1, "stopped", None),
        (0, "stopped", None),
    ]
    assert all(not run.tree.own_turns(b) for b in branches[1:])
    assert content["methods"]["sprout"]["attempts"] == 2, "stopped before a turn: not counted"
    assert log.count("stopped (another attempt passed)") == 3


def test_pass_at_k_first_stops_at_the_first_passing_root(tmp_path: Path) -> None:
    run, content, _ = run_methods(tmp_path, "oracle-noise:p=0", "pass@4-first", workers=1)
    roots = attempts(run, "pass@4-first")
    assert [(a.status, a.reward) for a in roots] == [("submitted", 1.0)] + [("stopped", None)] * 3
    summary = content["methods"]["pass@4-first"]
    assert summary["resolved"] == 1 and summary["attempts"] == 1 and summary["pass_at_1"] == 1.0


def test_shepherd_forks_once_from_the_trace_without_the_verifier(tmp_path: Path) -> None:
    run, content, _ = run_methods(tmp_path, TRAPPED, "shepherd", workers=1)
    root, *branches = attempts(run, "shepherd")
    assert root.reward == 0.0 and len(branches) == 7 and {b.round for b in branches} == {1}
    assert run.tree.analyses("two-edits") == {}, "Shepherd has no analyst"
    review = run.tree.reviews("two-edits")[("shepherd", 1)]
    assert review["source"] == "heuristic"
    assert all("(failed commands, then edits)" in plan["reason"] for plan in review["plans"])
    for branch in branches:  # the trace names the files the turns changed, not the verifier
        assert "expected 2, found 3" not in str(branch.starting_turn)
        assert "I changed" in str(branch.starting_turn)
    assert content["methods"]["shepherd"]["resolved"] == 1


def test_the_roots_common_prompt_is_counted_once(tmp_path: Path) -> None:
    one, _, _ = run_methods(tmp_path / "one", "oracle-noise:p=0", "pass@1")
    two, _, _ = run_methods(tmp_path / "two", "oracle-noise:p=0", "pass@2")
    single = one.tree.tokens(method="pass@1")
    double = two.tree.tokens(method="pass@2")
    (first_call, *_) = [c for c in two.tree.model_calls() if c.attempt_id == 2]
    assert double.spent == 2 * single.spent
    assert double.prefix_once == 2 * single.prefix_once - first_call.prompt_tokens
