"""Exports round-trip: written records read back as the same samples, in every format; the
CLI writes them and names what it cannot export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.train.export import (
    FORMATS,
    ExportError,
    Format,
    from_record,
    read_meta,
    read_samples,
    to_record,
    write_records,
)
from sprout.train.samples import build_samples
from tests.support.synthetic_tree import PROMPT, TreeBuilder, family


def run_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "layers").mkdir()
    family(folder).tree.close()
    return folder


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("credit", ["grpo", "tree"])
def test_export_reads_back_as_the_same_samples(tmp_path: Path, fmt: Format, credit: str) -> None:
    samples = build_samples(family(tmp_path).tree, credit=credit).samples  # type: ignore[arg-type]
    path = write_records(samples, fmt, tmp_path / "out" / f"groups.{fmt}.jsonl")
    assert read_samples(path, fmt) == list(samples)


def test_verl_records_use_the_agent_loop_names(tmp_path: Path) -> None:
    samples = build_samples(family(tmp_path).tree).samples
    child = next(s for s in samples if s.attempt_id == 3)
    record = to_record(child, "verl")
    # The prompt is everything before the first trained token: root 1's turn 1 and the
    # starting turn's context; the response starts with the starting turn.
    assert record["prompt_ids"] == [*PROMPT, 20, 21, 13]
    assert record["response_ids"] == [40, 41, 42, 16, 43]
    assert record["response_mask"] == [1, 1, 1, 0, 1]
    # verl takes a list of floats or no log-probs: a reviewer-written turn has none
    assert "response_logprobs" not in record
    extra = record["extra_fields"]
    assert extra["response_logprobs"] == [None, None, None, None, -0.9]
    assert extra["uid"] == "two-edits/train-rollouts" and record["reward_score"] == 1.0
    assert extra["advantages"] == pytest.approx([1.5, 1.5, 1.5, 0.0, 1.5], rel=1e-5)
    assert extra["prefix_tokens"] == 5
    assert record["num_turns"] == child.turns >= 1
    assert set(record["metrics"]) == {"generate_sequences", "tool_calls"}


def test_verl_records_carry_response_logprobs_when_every_token_has_one(tmp_path: Path) -> None:
    samples = build_samples(family(tmp_path).tree).samples
    records = [to_record(sample, "verl") for sample in samples]
    complete = [r for r in records if "response_logprobs" in r]
    assert complete, "some rollout in the family has a log-prob on every response token"
    for record in complete:
        assert len(record["response_logprobs"]) == len(record["response_ids"])
        assert all(isinstance(lp, float) for lp in record["response_logprobs"])


def test_trl_records_hold_what_a_rollout_func_returns(tmp_path: Path) -> None:
    samples = build_samples(family(tmp_path).tree).samples
    record = to_record(samples[0], "trl")
    assert {"prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "group_id"} <= set(
        record
    )
    assert len(record["completion_ids"]) == len(record["logprobs"]) == len(record["env_mask"])
    assert record["env_mask"][0] == 1, "a completion starts with a trained token"


def test_trl_refuses_groups_of_different_sizes(tmp_path: Path) -> None:
    build = family(tmp_path)
    build.task = "other"
    build.tree.add_task("other", {})
    root = build.root()
    build.turn(root, 1, PROMPT, (70,))
    build.finish(root, 1.0)
    samples = build_samples(build.tree).samples
    with pytest.raises(
        ExportError, match=r"every group needs 4 samples.*other/train-rollouts \(1\)"
    ):
        write_records(samples, "trl", tmp_path / "groups.jsonl")
    assert not (tmp_path / "groups.jsonl").exists()
    write_records(samples, "verl", tmp_path / "groups.jsonl")  # verl groups by uid: any size


def test_a_record_missing_a_field_is_named(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="a trl record without the field 'env_mask'"):
        from_record({"prompt_ids": [1], "completion_ids": [2], "logprobs": [None]}, "trl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(ExportError, match=r"bad.jsonl:1: not a JSON record"):
        read_samples(bad, "jsonl")


@pytest.mark.checkpoints_elsewhere("a tree written without a sandbox: its checkpoints are names")
def test_the_cli_exports_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_folder(tmp_path)
    out = tmp_path / "groups.trl.jsonl"
    assert main(["export", str(run), "--format", "trl", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "1 groups (0 with zero variance, 0%), 4 samples, 14 of 33 tokens trained" in printed
    lines = out.read_text().splitlines()
    assert len(lines) == 4 and {json.loads(line)["group_id"] for line in lines} == {
        "two-edits/train-rollouts"
    }
    assert read_meta(out) == {"format": "trl", "samples": 4, "tokenizer": None}
    assert (
        main(["export", str(run), "--format", "jsonl", "--out", str(out), "--credit", "sibling"])
        == 0
    )


@pytest.mark.checkpoints_elsewhere("a tree written without a sandbox: its checkpoints are names")
def test_the_cli_names_a_run_with_nothing_to_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "layers").mkdir()
    build = TreeBuilder(folder)
    build.root()
    build.tree.close()
    code = main(["export", str(folder), "--format", "verl", "--out", str(tmp_path / "x.jsonl")])
    assert code == 2
    assert "no finished group to train on (two-edits/train-rollouts: attempts 1" in (
        capsys.readouterr().err
    )
