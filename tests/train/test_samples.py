"""Samples from stored token ids: layout, masks, credit, and the errors that name their input.

The group is `family` of tests/support/synthetic_tree.py: rewards 0, 0, 1, 0, so GRPO gives
mean 1/4, sample std 1/2: +1.5 to the pass and -0.5 to the failures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from sprout.models.resolve import ModelSpec
from sprout.train.samples import (
    RoleTextError,
    Sample,
    SampleError,
    assert_no_role_text,
    build_samples,
)
from tests.support.requirements import require_host_image
from tests.support.synthetic_tree import PROMPT, STARTING, TASK, TreeBuilder, family


def by_attempt(samples: Sequence[Sample]) -> dict[int, Sample]:
    return {sample.attempt_id: sample for sample in samples}


def test_a_branch_is_its_parents_ids_then_its_own_with_the_prefix_masked(tmp_path: Path) -> None:
    batch = build_samples(family(tmp_path).tree)
    one, two, three, four = (by_attempt(batch.samples)[i] for i in (1, 2, 3, 4))
    assert one.input_ids == (*PROMPT, 20, 21, 13, 22, 23, 14, 24)
    assert one.loss_mask == (0, 0, 0, 1, 1, 0, 1, 1, 0, 1)
    assert one.prefix_tokens == 0 and one.parent_id is None
    # Child 3 keeps root 1's turn 1 (5 tokens, masked), then its starting turn and turn 3.
    assert three.input_ids == (*PROMPT, 20, 21, 13, 40, 41, 42, 16, 43)
    assert three.loss_mask == (0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1)
    assert three.prefix_tokens == 5 and three.parent_id == 1
    assert four.input_ids == (*PROMPT, 50, 51) and four.prefix_tokens == 0
    assert len(two.input_ids) == len(two.loss_mask) == len(two.advantages) == 7
    assert {s.group_id for s in batch.samples} == {f"{TASK}/train-rollouts"}


def test_every_produced_token_is_trained_exactly_once(tmp_path: Path) -> None:
    samples = build_samples(family(tmp_path).tree).samples
    trained: Counter[int] = Counter()
    for sample in samples:
        trained.update(t for t, m in zip(sample.input_ids, sample.loss_mask, strict=True) if m)
    # Completion ids are unique per turn in the fixture, so each must count once.
    assert trained == Counter(
        {i: 1 for i in (20, 21, 22, 23, 24, 30, 31, 32, 40, 41, 42, 43, 50, 51)}
    )


def test_the_starting_turn_is_trained_unless_switched_off(tmp_path: Path) -> None:
    tree = family(tmp_path).tree
    three = by_attempt(build_samples(tree, train_starting_turn=False).samples)[3]
    assert three.loss_mask == (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)
    assert three.advantages[6:9] == (0.0, 0.0, 0.0)


def test_advantages_sit_on_trained_tokens_only(tmp_path: Path) -> None:
    samples = by_attempt(build_samples(family(tmp_path).tree).samples)
    for sample in samples.values():
        assert all(
            a == 0.0 for a, m in zip(sample.advantages, sample.loss_mask, strict=True) if not m
        )
    trained = [a for a, m in zip(samples[3].advantages, samples[3].loss_mask, strict=True) if m]
    assert trained == pytest.approx([1.5] * 4, rel=1e-5)
    assert samples[1].advantages[3] == pytest.approx(-0.5, rel=1e-5)


def test_tree_credit_reaches_the_samples(tmp_path: Path) -> None:
    samples = by_attempt(build_samples(family(tmp_path).tree, credit="tree").samples)
    # Root 1's turn 1 is held by 1 and 3 (4 starts at 0): mean 1/2 - group mean 1/4.
    assert samples[1].advantages[3:5] == (0.25, 0.25)
    assert samples[1].advantages[6:8] == (-0.25, -0.25)  # turn 2: only 1 itself


def test_rollout_logprobs_are_kept_where_the_engine_gave_them(tmp_path: Path) -> None:
    three = by_attempt(build_samples(family(tmp_path).tree).samples)[3]
    assert three.rollout_logprobs == (
        None,
        None,
        None,
        -0.1,
        -0.2,
        None,
        None,
        None,
        None,
        None,
        -0.9,
    )


def test_the_report_counts_groups_samples_and_tokens(tmp_path: Path) -> None:
    report = build_samples(family(tmp_path).tree).report
    assert (report.groups, report.zero_variance_groups, report.samples) == (1, 0, 4)
    assert report.tokens_in_batch == 10 + 7 + 11 + 5
    assert report.tokens_trained == 14
    assert "1 groups (0 with zero variance, 0%), 4 samples, 14 of 33 tokens trained" in (
        report.describe()
    )


def test_a_zero_variance_group_is_reported_and_trains_nothing(tmp_path: Path) -> None:
    build = TreeBuilder(tmp_path)
    for _ in range(2):
        root = build.root()
        build.turn(root, 1, PROMPT, (20,))
        build.finish(root, 0.0)
    batch = build_samples(build.tree)
    assert batch.report.zero_variance_groups == 1 and batch.report.zero_variance_fraction == 1.0
    assert all(a == 0.0 for s in batch.samples for a in s.advantages)


def test_missing_ids_name_the_task_attempt_and_turn(tmp_path: Path) -> None:
    build = TreeBuilder(tmp_path)
    root = build.root()
    build.turn(root, 1, None, None)
    build.finish(root, 1.0)
    with pytest.raises(SampleError, match=r"task 'two-edits': attempt 1: turn 1:1 .* no stored"):
        build_samples(build.tree)


def test_a_run_with_no_finished_group_is_refused(tmp_path: Path) -> None:
    build = TreeBuilder(tmp_path)
    root = build.root()
    build.turn(root, 1, PROMPT, (20,))
    with pytest.raises(
        SampleError, match=r"no finished group .*two-edits/train-rollouts: attempts 1"
    ):
        build_samples(build.tree)


def test_unfinished_groups_are_skipped_and_named(tmp_path: Path) -> None:
    build = family(tmp_path)
    other = TreeBuilder.__new__(TreeBuilder)
    other.tree, other.task = build.tree, "other-task"
    build.tree.add_task("other-task", {})
    other.root()  # running: its group is not finished
    batch = build_samples(build.tree)
    assert batch.report.groups == 1
    assert batch.report.unfinished == (
        "other-task/train-rollouts: attempts 5 not finished and verified",
    )


def test_a_sample_longer_than_max_length_is_an_error_or_dropped(tmp_path: Path) -> None:
    tree = family(tmp_path).tree
    with pytest.raises(SampleError, match=r"attempt 3: 11 tokens, longer than max_length 10"):
        build_samples(tree, max_length=10)
    batch = build_samples(tree, max_length=10, overlong="drop")
    assert sorted(by_attempt(batch.samples)) == [1, 2, 4]
    assert batch.report.dropped == (
        "task 'two-edits', attempt 3: 11 tokens, longer than max_length 10",
    )


def test_analysis_text_in_a_turn_is_refused(tmp_path: Path) -> None:
    build = family(tmp_path)
    why = "The agent wrote 9 into a.txt instead of 1, so the check of a.txt fails."
    build.tree.add_analysis(TASK, 1, analysis(1, why))
    build_samples(build.tree)  # stored, but in no turn: fine
    root = build.root()
    build.turn(root, 1, PROMPT, (60,), text=f"Note to self: {why}")
    build.finish(root, 1.0)
    with pytest.raises(RoleTextError, match=r"attempt 5: turn 5:1 holds analysis or review text"):
        build_samples(build.tree)


def test_a_quoted_analysis_in_a_starting_turn_is_allowed(tmp_path: Path) -> None:
    build = family(tmp_path)
    build.tree.add_analysis(TASK, 1, analysis(1, STARTING))
    assert len(build_samples(build.tree).samples) == 4


def test_decoded_ids_with_review_text_are_refused(tmp_path: Path) -> None:
    build = family(tmp_path)
    reason = "heuristic: boundary 1 is choice 1 of attempt 1's analysis; redo step 2"
    plan = {"parent_id": 1, "boundary": 1, "starting_turn": STARTING, "reason": reason}
    build.tree.add_review(TASK, "train-rollouts", 1, {"plans": [plan], "source": "heuristic"})

    def decode(ids: Sequence[int]) -> str:
        return reason if 43 in ids else " ".join(map(str, ids))

    with pytest.raises(RoleTextError, match=r"attempt 3: its token ids decode to analysis"):
        build_samples(build.tree, decode=decode)
    samples = build_samples(build.tree).samples
    with pytest.raises(RoleTextError, match="attempt 3"):
        assert_no_role_text(samples, build.tree, decode)


def test_a_reviewer_turn_that_is_not_the_starting_turn_is_refused(tmp_path: Path) -> None:
    build = TreeBuilder(tmp_path)
    root = build.root()
    build.turn(root, 1, PROMPT, (20,), author="reviewer", text="a reviewer's note")
    build.finish(root, 1.0)
    with pytest.raises(RoleTextError, match=r"turn 1:1 by reviewer is not that branch's starting"):
        build_samples(build.tree)


def analysis(attempt_id: int, why: str) -> dict[str, object]:
    return {
        "attempt_id": attempt_id,
        "why_failed": why,
        "keep": "",
        "boundaries": [0],
        "source": "heuristic",
        "fallback_reason": None,
    }


@pytest.mark.slow
def test_a_tiny_model_run_gives_token_exact_samples(tmp_path: Path, tiny_model_path: Path) -> None:
    """The training schedule with a real tokenizer and model, then a guided branch: every
    child's prefix is its parent's ids to the token, and the decoded ids hold no role text."""
    require_host_image()
    from sprout.agent import ActorConfig
    from sprout.models.hf import HFModel
    from sprout.runfolder import RunFolder
    from sprout.search import Progress, RunSettings
    from sprout.search.halt import Halt
    from sprout.search.methods import training_method
    from sprout.search.registry import play
    from sprout.search.runner import _Bases, _Concurrency, _RunContext, _search
    from sprout.search.schedule_roles import ScheduleRoles
    from sprout.search.slots import Slots
    from sprout.tasks import load_native
    from sprout.tasksandbox import TaskSandboxService
    from sprout.tasksandbox.room import Room
    from tests.support.taskfolders import two_edits_task

    task = load_native(two_edits_task(tmp_path / "tasks"))
    run = RunFolder.create(tmp_path / "run")
    run.tree.add_task(task.id, task.model_dump(mode="json"))
    method = training_method(roots=2, children=1, selector="uniform")
    settings = RunSettings(
        ModelSpec.parse(f"hf/{tiny_model_path}"), (method,), actor=ActorConfig(max_turns=2)
    )
    model = HFModel(tiny_model_path, max_new_tokens=12, seed=0)
    slots = Slots(2)
    context = _RunContext(
        run=run,
        settings=settings,
        progress=Progress(quiet=True),
        halt=Halt(),
        slots=slots,
        shared=model,
        bases=_Bases([task], slots, TaskSandboxService(run.layers), replays=False),
        concurrency=_Concurrency(run, Room(2, "the test's"), slots),
    )
    search = _search(context, task, method)
    play(method, search, ScheduleRoles(search, settings.actor, settings.roles))
    root = next(a for a in search.attempts() if a.kind == "root")
    guided = run.tree.branch(root, 1, STARTING, round=9, method=method.name)
    search.play([guided])

    batch = build_samples(run.tree, decode=model.tokenizer.decode)
    samples = by_attempt(batch.samples)
    assert batch.report.groups == 1 and len(samples) == 5
    for sample in samples.values():
        if sample.parent_id is not None:
            parent = samples[sample.parent_id]
            assert (
                sample.input_ids[: sample.prefix_tokens] == parent.input_ids[: sample.prefix_tokens]
            )
            assert not any(sample.loss_mask[: sample.prefix_tokens])
        produced = sum(
            len(ids)
            for _, ids, turn in run.tree.token_path(run.tree.attempt(sample.attempt_id))
            if turn.attempt_id == sample.attempt_id
        )
        assert sum(sample.loss_mask) == produced
    text = model.tokenizer.decode(samples[guided.id].input_ids)
    assert "Put 1 in a.txt and 2 in b.txt." in text and "echo 2 > b.txt" in text
