"""A model whose context window the roles' prompts outgrow: `sprout run --method
train-rollouts` on example tasks with the tiny local model (a 4,096-token window and a
tokenizer of 400 pieces, so three turns of an attempt fill it) ends every task with its
group of rollouts, the roles fitting their prompts or falling back, never in error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.runfolder import RunFolder
from tests.support.repo_paths import EXAMPLE_TASKS
from tests.support.requirements import require_host_image

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


@pytest.mark.timeout(900)
def test_every_task_yields_its_training_records(
    tmp_path: Path, tiny_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    config = tmp_path / "settings.toml"
    # the tiny model writes no JSON, so its roles fall back: one try each keeps it short
    config.write_text("[actor]\nmax_turns = 3\n\n[roles]\nmax_retries = 0\n")
    out = tmp_path / "run"
    spec = f"hf/{tiny_model_path}"
    # two of the examples: each task's group is played alike, and the suite's time is dear
    tasks = [str(EXAMPLE_TASKS / name) for name in ("blog-slugs", "invoice-rounding")]
    argv = ["run", *tasks, "--model", spec, "--method", "train-rollouts"]
    assert main([*argv, "--children", "1", "--config", str(config), "--out", str(out)]) == 0
    progress = capsys.readouterr()
    assert "ERROR" not in progress.out + progress.err

    results = json.loads((out / "results.json").read_text())
    tasks = results["tasks"]
    assert len(tasks) == 2
    assert all("error" not in row["train-rollouts"] for row in tasks.values())
    sources = results["methods"]["train-rollouts"]["role_sources"]
    assert sum(sources["analyst"].values()) == 2 * len(tasks)  # both roots of each task failed

    run = RunFolder.open(out)
    first: dict[int | None, int] = {}
    for call in run.tree.model_calls():
        if call.role == "analyst":
            first.setdefault(call.attempt_id, call.prompt_tokens)
    run.close()
    # each analysis asked in a prompt that left the reply its 1,024 tokens of the window
    assert first and max(first.values()) <= 4_096 - 1_024

    records = tmp_path / "records.jsonl"
    assert main(["export", str(out), "--format", "trl", "--out", str(records)]) == 0
    exported = [json.loads(line) for line in records.read_text().splitlines()]
    assert {row["task_id"] for row in exported} == set(tasks)
    assert len(exported) == 4 * len(tasks)  # 2 roots and 1 child each, every one a record
