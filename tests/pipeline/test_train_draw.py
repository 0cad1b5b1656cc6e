"""`sprout train --tasks-per-step N`: each step plays N tasks of a seeded draw, epoch by
epoch, recorded in train.jsonl, the same after `--resume`; nothing of a task not drawn."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sprout.cli import main
from sprout.pipeline.task_draw import TaskDrawError, step_tasks
from sprout.runfolder import RunFolder
from sprout.tasks.setup import image_choice
from tests.support.requirements import require_host_image
from tests.support.taskfolders import two_edits_task
from tests.support.train_command import train_args

IDS = [f"t{i}" for i in range(10)]


def test_each_epoch_is_a_permutation_cut_in_whole_steps() -> None:
    draws = [step_tasks(IDS, 3, 7, step) for step in range(1, 7)]
    assert all(len(drawn) == 3 == len(set(drawn)) for drawn in draws)
    for epoch in (draws[:3], draws[3:]):  # 10 // 3 steps an epoch; the tenth task waits
        played = [task for drawn in epoch for task in drawn]
        assert len(set(played)) == 9 and set(played) <= set(IDS)
    assert draws[:3] != draws[3:]  # each epoch shuffled afresh


def test_the_draw_depends_on_the_seed_and_the_ids_not_their_order() -> None:
    assert step_tasks(IDS, 3, 7, 5) == step_tasks(IDS[::-1], 3, 7, 5)
    assert [step_tasks(IDS, 3, 7, s) for s in (1, 2, 3)] != [
        step_tasks(IDS, 3, 8, s) for s in (1, 2, 3)
    ]
    with pytest.raises(TaskDrawError, match="--tasks-per-step: expected 1 to 10"):
        step_tasks(IDS, 11, 7, 1)


def _tasks(root: Path, count: int) -> None:
    for index in range(count):
        two_edits_task(root, f"t{index}")


def _train(tmp_path: Path, model: Path, out: str, *extra: str, steps: int) -> int:
    args = train_args(tmp_path, model, "--roots", "1", "--tasks-per-step", "2", *extra)
    args[args.index("--out") + 1] = str(tmp_path / out)
    args[args.index("--steps") + 1] = str(steps)
    return main(args)


def _log(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]


def test_each_step_plays_its_draw_and_a_resumed_run_draws_the_same(
    tmp_path: Path, tiny_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_host_image()
    _tasks(tmp_path / "tasks", 5)  # 2 a step: an epoch is 2 steps, and leaves one task out
    chosen: list[list[str]] = []
    choose = image_choice.choose_task_images

    def recording(tasks: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        chosen.append([task.id for task in tasks])
        return choose(tasks, *args, **kwargs)

    monkeypatch.setattr(image_choice, "choose_task_images", recording)
    assert _train(tmp_path, tiny_model_path, "whole", "--data-seed", "5", steps=3) == 0
    whole = _log(tmp_path / "whole")
    assert [line["tasks"] for line in whole] == [step_tasks(IDS[:5], 2, 5, s) for s in (1, 2, 3)]
    run = RunFolder.open(tmp_path / "whole")
    for line in whole:  # the step's groups are its drawn tasks', one each
        method = f"train@{line['step']}"
        assert line["groups"] == 2
        attempts = [a for a in run.tree.attempts() if a.method == method]
        assert {a.task_id for a in attempts} == set(line["tasks"])
    run.close()
    # an image is chosen the first time its task is drawn, never for a task no step drew
    assert chosen[0] == whole[0]["tasks"]
    played = {task for line in whole for task in line["tasks"]}
    assert sorted(task for ids in chosen for task in ids) == sorted(played)

    # one step, then --resume to three, into the next epoch: the same draw at every step
    assert _train(tmp_path, tiny_model_path, "legs", "--data-seed", "5", steps=1) == 0
    run = RunFolder.open(tmp_path / "legs")
    assert set(run.tree.task_ids()) == set(whole[0]["tasks"])
    run.close()
    assert _train(tmp_path, tiny_model_path, "legs", "--data-seed", "5", "--resume", steps=3) == 0
    assert [line["tasks"] for line in _log(tmp_path / "legs")] == [line["tasks"] for line in whole]

    # a step's export carries that step's tasks only
    records = tmp_path / "step3.trl.jsonl"
    export = ["export", str(tmp_path / "whole"), "--format", "trl", "--out", str(records)]
    assert main([*export, "--method", "train@3"]) == 0
    exported = [json.loads(line) for line in records.read_text().splitlines()]
    assert exported and {record["task_id"] for record in exported} <= set(whole[2]["tasks"])


def test_a_resume_with_another_draw_is_refused(
    tmp_path: Path, tiny_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    _tasks(tmp_path / "tasks", 3)
    assert _train(tmp_path, tiny_model_path, "run", steps=1) == 0
    assert _train(tmp_path, tiny_model_path, "run", "--data-seed", "1", "--resume", steps=2) == 2
    assert "different settings (data_seed)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--tasks-per-step", "0"), "--tasks-per-step: expected at least 1, got 0"),
        (("--tasks-per-step", "4"), "--tasks-per-step: expected 1 to 3 (the number of tasks)"),
        (("--tasks-per-step", "-2"), "--tasks-per-step: expected at least 1, got -2"),
    ],
)
def test_a_bad_tasks_per_step_is_one_line_and_exit_2(
    tmp_path: Path,
    tiny_model_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
    message: str,
) -> None:
    _tasks(tmp_path / "tasks", 3)
    assert main(train_args(tmp_path, tiny_model_path, *extra)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "run").exists()


def test_a_data_seed_needs_a_draw(
    tmp_path: Path, tiny_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tasks(tmp_path / "tasks", 3)
    assert main(train_args(tmp_path, tiny_model_path, "--data-seed", "3")) == 2
    assert "--data-seed: only with --tasks-per-step" in capsys.readouterr().err
