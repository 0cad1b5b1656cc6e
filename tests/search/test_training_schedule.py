"""The training schedule end to end on the two-edit task: 2 roots and 3 children per root,
guided iff both roots failed; resumable. p=1 makes every root fail, p=0 makes every root pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.models.resolve import ModelSpec
from sprout.runfolder import RunFolder
from sprout.search import Progress, RunSettings, parse_methods, run_tasks
from sprout.search.methods import MethodError, training_method
from sprout.search.runner import RunSettingsError, check_settings
from sprout.search.task_search import Search
from sprout.tasks import load_native
from sprout.tree import Attempt
from tests.support.requirements import require_host_image
from tests.support.taskfolders import TRAPPED, two_edits_task

METHOD = "train-rollouts"


def train(tmp_path: Path, model: str, **options: object) -> RunFolder:
    require_host_image()
    folder = tmp_path / "tasks" / "two-edits"
    task = load_native(folder if folder.exists() else two_edits_task(tmp_path / "tasks"))
    run = RunFolder.create(tmp_path / "run")
    settings = RunSettings(ModelSpec.parse(model), parse_methods(METHOD, **options), workers=2)
    run_tasks([task], run, settings, Progress(quiet=True))
    return run


def group(run: RunFolder) -> tuple[list[Attempt], list[Attempt]]:
    found = [a for a in run.tree.attempts("two-edits") if a.method == METHOD]
    return [a for a in found if a.kind == "root"], [a for a in found if a.kind == "branch"]


def test_both_roots_fail_so_each_root_gets_three_reviewer_guided_children(
    tmp_path: Path,
) -> None:
    run = train(tmp_path, TRAPPED)
    roots, children = group(run)
    assert len(roots) == 2 and all(r.reward == 0.0 for r in roots)
    for number, root in enumerate(roots, start=1):
        mine = [c for c in children if c.parent_id == root.id]
        assert len(mine) == 3
        assert all(c.guided and c.starting_turn and c.round == number for c in mine)
        assert ("train-rollouts", number) in run.tree.reviews("two-edits")
    assert len(children) == 6
    assert all(c.status == "submitted" and c.reward is not None for c in children)
    # The heuristic reviewer's starting turns name b.txt, which the verifier named: warned,
    # every child avoids the trap its root fell into. The group has both rewards.
    assert all("/workspace/b.txt" in str(c.starting_turn) for c in children)
    assert {c.reward for c in children} == {1.0}
    assert set(run.tree.analyses("two-edits")) == {r.id for r in roots}


@pytest.mark.parametrize("selector", ["reviewer", "heuristic", "uniform"])
def test_a_passing_root_makes_the_children_unguided(tmp_path: Path, selector: str) -> None:
    run = train(tmp_path, "oracle-noise:p=0", selector=selector, seed=3)
    roots, children = group(run)
    assert [r.reward for r in roots] == [1.0, 1.0]
    assert len(children) == 6
    assert not any(c.guided or c.starting_turn for c in children)
    for root in roots:
        mine = [c for c in children if c.parent_id == root.id]
        last = run.tree.last_index(root)
        assert len(mine) == 3 and all(0 <= c.boundary < last for c in mine)
    assert all(c.reward == 1.0 for c in children), "p=0 never errs: an all-pass group"
    assert run.tree.reviews("two-edits") == {}, "a passing root is not reviewed"


def test_group_size_and_children_are_configurable(tmp_path: Path) -> None:
    run = train(tmp_path, "oracle-noise:p=1", roots=1, group_size=3)
    roots, children = group(run)
    assert len(roots) == 1 and len(children) == 2


def test_a_resumed_run_plays_the_recorded_children_and_adds_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    played = Search.play

    def killed_before_the_children(search: Search, attempts: list[Attempt]) -> list[Attempt]:
        if any(a.kind == "branch" for a in attempts):
            raise KeyboardInterrupt("killed")
        return played(search, attempts)

    monkeypatch.setattr(Search, "play", killed_before_the_children)
    with pytest.raises(KeyboardInterrupt):
        train(tmp_path, "oracle-noise:p=1")
    roots, children = group(run := RunFolder.open(tmp_path / "run"))
    assert len(children) == 6 and all(c.status == "running" for c in children)
    root_turns = [len(run.tree.own_turns(r)) for r in roots]
    run.close()

    monkeypatch.setattr(Search, "play", played)
    run = train(tmp_path, "oracle-noise:p=1")
    again_roots, again_children = group(run)
    assert [r.id for r in again_roots] == [r.id for r in roots]
    assert [len(run.tree.own_turns(r)) for r in again_roots] == root_turns
    assert [c.id for c in again_children] == [c.id for c in children]
    assert all(c.status == "submitted" and c.reward is not None for c in again_children)


def test_method_settings_are_checked() -> None:
    method = training_method()
    assert (method.roots, method.children, method.group_size, method.selector) == (
        2,
        3,
        8,
        "reviewer",
    )
    assert not method.stop_at_pass
    with pytest.raises(MethodError, match="--selector 'best'"):
        training_method(selector="best")
    with pytest.raises(MethodError, match="--group-size 7"):
        training_method(group_size=7)
    with pytest.raises(MethodError, match="disagree"):
        training_method(group_size=8, children=2)
    with pytest.raises(RunSettingsError, match="needs per-token log-probabilities"):
        check_settings(
            RunSettings(ModelSpec.parse("oracle"), (training_method(selector="entropy"),))
        )
