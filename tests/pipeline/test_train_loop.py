"""`sprout train` end to end with the tiny local model: rollouts, samples, learner steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.runfolder import RunFolder
from tests.support.requirements import require_host_image
from tests.support.taskfolders import two_edits_task
from tests.support.train_command import COIN, train


def test_each_step_rolls_out_with_the_last_weights_and_trains(
    tmp_path: Path, tiny_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    task = two_edits_task(tmp_path / "tasks", "coin")
    (task / "tests" / "test.sh").write_text(COIN)
    assert train(tmp_path, tiny_model_path) == 0
    out = tmp_path / "run"
    log = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert [entry["step"] for entry in log] == [1, 2]
    for entry in log:
        assert Path(entry["policy"]).is_dir() and (Path(entry["policy"]) / "config.json").is_file()
        assert entry["groups"] == 1 and 0 < entry["tokens_trained"] < entry["tokens_in_batch"]
    run = RunFolder.open(out)
    methods = {a.method for a in run.tree.attempts("coin")}
    assert methods == {"train@1", "train@2"}
    assert len(run.tree.attempts("coin")) == 2 * (2 + 2)  # two roots, one child each, twice
    run.close()
    assert "2 steps run now" in capsys.readouterr().out


def test_training_needs_a_local_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two_edits_task(tmp_path / "tasks")
    code = main(["train", "--model", "oracle", "--tasks", str(tmp_path / "tasks"), "--out", "x"])
    assert code == 2
    assert "training needs a local model, hf/PATH" in capsys.readouterr().err


def test_a_resumed_run_goes_on_from_its_last_saved_step(
    tmp_path: Path, tiny_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    task = two_edits_task(tmp_path / "tasks", "coin")
    (task / "tests" / "test.sh").write_text(COIN)
    assert train(tmp_path, tiny_model_path, steps=1) == 0
    first = (tmp_path / "run" / "train.jsonl").read_text()
    assert (tmp_path / "run" / "policy" / "step-1" / "optimizer.pt").is_file()

    assert train(tmp_path, tiny_model_path, "--resume", "--lr", "5e-4") == 2
    assert "different settings (learner)" in capsys.readouterr().err

    assert train(tmp_path, tiny_model_path, "--resume") == 0
    log = (tmp_path / "run" / "train.jsonl").read_text()
    assert log.startswith(first) and len(log.splitlines()) == 2
    assert "1 steps run now" in capsys.readouterr().out
    run = RunFolder.open(tmp_path / "run")
    assert {a.method for a in run.tree.attempts("coin")} == {"train@1", "train@2"}
    run.close()
