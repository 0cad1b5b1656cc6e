"""Exports fed to the trainers' own classes, not to a copy of their fields: every `verl`
record builds verl's `AgentLoopOutput` and converts as its agent loop converts it, and
TRL's `GRPOTrainer` takes one step on the tiny model with a `rollout_func` that replays
the `trl` records, as docs/training.md shows.

Both need the `trainers` extra, which `make test` installs (verl itself with --no-deps:
see pyproject.toml); without it these tests skip and say so.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from sprout.train.credit import Credit
from sprout.train.export import Format, write_records
from sprout.train.samples import Sample, build_samples
from tests.support.requirements import require_train_extra
from tests.support.synthetic_tree import family

MISSING = "{} is not installed (the trainers extra: make test installs it)"


def exported(
    tmp_path: Path, fmt: Format, credit: Credit = "grpo"
) -> tuple[list[Sample], list[dict[str, Any]]]:
    """The family's samples and the records `sprout export --format FMT` writes for them."""
    samples = list(build_samples(family(tmp_path).tree, credit=credit).samples)
    path = write_records(samples, fmt, tmp_path / f"groups.{fmt}.jsonl")
    return samples, [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_verl_agent_loop_output_takes_every_record_as_written(tmp_path: Path) -> None:
    require_train_extra()
    agent_loop = pytest.importorskip(
        "verl.experimental.agent_loop.agent_loop", reason=MISSING.format("verl")
    )
    samples, records = exported(tmp_path, "verl")
    with_logprobs = ["response_logprobs" in record for record in records]
    assert any(with_logprobs) and not all(with_logprobs), "both kinds of record are checked"
    for sample, record in zip(samples, records, strict=True):
        output = agent_loop.AgentLoopOutput(**record)
        assert output.model_dump(exclude_unset=True) == record
        # as_dict is what verl's AgentLoopWorker turns each output into before padding
        batch = output.as_dict()
        cut = sample.loss_mask.index(1)
        assert batch["prompts"].tolist() == list(sample.input_ids[:cut])
        assert batch["responses"].tolist() == list(sample.input_ids[cut:])
        assert batch["response_mask"].tolist() == list(sample.loss_mask[cut:])
        reward_on_the_last_token = [0.0] * (len(sample.input_ids) - cut - 1) + [sample.reward]
        assert batch["rm_scores"].tolist() == reward_on_the_last_token
        assert batch["extra_fields"]["uid"] == sample.group_id
        if None not in sample.rollout_logprobs[cut:]:
            assert batch["rollout_log_probs"].tolist() == pytest.approx(
                sample.rollout_logprobs[cut:]
            )
        else:
            assert "rollout_log_probs" not in batch
            # why the field is left out rather than written with its nulls
            nulls = record["extra_fields"]["response_logprobs"]
            with pytest.raises(ValueError, match="response_logprobs"):
                agent_loop.AgentLoopOutput(**record, response_logprobs=nulls)


@pytest.mark.slow
@pytest.mark.parametrize(("credit", "norm_by_std"), [("grpo", True), ("drgrpo", False)])
def test_verl_grpo_over_the_uid_gives_the_exported_advantages(
    tmp_path: Path, credit: Credit, norm_by_std: bool
) -> None:
    require_train_extra()
    agent_loop = pytest.importorskip(
        "verl.experimental.agent_loop.agent_loop", reason=MISSING.format("verl")
    )
    from torch.nn.utils.rnn import pad_sequence
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    samples, records = exported(tmp_path, "verl", credit)
    outputs = [agent_loop.AgentLoopOutput(**record).as_dict() for record in records]
    advantages, _ = compute_grpo_outcome_advantage(
        token_level_rewards=pad_sequence([o["rm_scores"] for o in outputs], batch_first=True),
        response_mask=pad_sequence([o["response_mask"] for o in outputs], batch_first=True),
        index=[o["extra_fields"]["uid"] for o in outputs],
        norm_adv_by_std_in_grpo=norm_by_std,
    )
    assert len({sample.reward for sample in samples}) > 1, "a group with variance"
    for row, sample in zip(advantages.tolist(), samples, strict=True):
        cut = sample.loss_mask.index(1)
        ours = list(sample.advantages[cut:])
        assert row == pytest.approx(ours + [0.0] * (len(row) - len(ours)), abs=1e-6)


@pytest.mark.slow
def test_trl_grpo_trainer_takes_a_step_on_the_exported_ids(
    tmp_path: Path, tiny_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl", reason=MISSING.format("trl"))
    pytest.importorskip("datasets", reason=MISSING.format("datasets"))
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental: we know
    samples, records = exported(tmp_path, "trl")
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[record["group_id"]].append(record)
    size = len(records)
    assert list(groups) == ["two-edits/train-rollouts"] and size == 4

    calls: list[list[str]] = []

    def rollout_func(prompts: list[str], trainer: Any) -> dict[str, list[Any]]:
        calls.append(prompts)
        taken: Counter[str] = Counter()
        rows = []
        for group_id in prompts:
            rows.append(groups[group_id][taken[group_id] % size])
            taken[group_id] += 1
        return {
            "prompt_ids": [r["prompt_ids"] for r in rows],
            "completion_ids": [r["completion_ids"] for r in rows],
            "logprobs": [r["logprobs"] for r in rows],
            "env_mask": [r["env_mask"] for r in rows],
            "sprout_reward": [r["reward"] for r in rows],
        }

    def sprout_reward(
        completions: list[str], sprout_reward: list[float | None], **_: Any
    ) -> list[float | None]:
        return sprout_reward

    batches: list[dict[str, Any]] = []

    class Recording(GRPOTrainer):
        """TRL's trainer, keeping each batch its loss is computed on."""

        def compute_loss(self, model: Any, inputs: dict[str, Any], *args: Any, **kw: Any) -> Any:
            batches.append(inputs)
            return super().compute_loss(model, inputs, *args, **kw)

    trainer = Recording(
        model=str(tiny_model_path),
        reward_funcs=sprout_reward,
        train_dataset=Dataset.from_dict({"prompt": list(groups)}),
        rollout_func=rollout_func,
        args=GRPOConfig(
            output_dir=str(tmp_path / "trl"),
            num_generations=size,
            per_device_train_batch_size=size,
            beta=0.0,
            max_steps=1,
            learning_rate=1e-2,
            use_cpu=True,
            bf16=False,
            report_to="none",
            save_strategy="no",
            seed=0,
        ),
    )
    model = trainer.model
    assert model is not None
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer.train()

    assert trainer.state.global_step == 1 and len(batches) == 1
    assert calls == [list(groups) * size], "the group's prompt, num_generations times"
    [batch] = batches
    trained = {}
    for row in range(size):
        prompt = batch["prompt_ids"][row][batch["prompt_mask"][row].bool()].tolist()
        length = int(batch["completion_mask"][row].sum())
        completion = batch["completion_ids"][row][:length].tolist()
        mask = (batch["completion_mask"] * batch["tool_mask"])[row][:length].tolist()
        logprobs = batch["sampling_per_token_logps"][row][:length].tolist()
        advantage = float(batch["advantages"][row])
        trained[tuple(prompt + completion)] = (len(prompt), mask, logprobs, advantage)
    assert set(trained) == {sample.input_ids for sample in samples}
    for sample in samples:
        cut, mask, logprobs, advantage = trained[sample.input_ids]
        assert cut == sample.loss_mask.index(1), "the prompt ends at the first trained token"
        assert mask == list(sample.loss_mask[cut:])
        rollout = sample.rollout_logprobs[cut:]
        assert [math.isnan(lp) for lp in logprobs] == [lp is None for lp in rollout]
        assert [lp for lp in logprobs if not math.isnan(lp)] == pytest.approx(
            [lp for lp in rollout if lp is not None]
        )
        # TRL's scale_rewards="group" is our grpo credit, up to its epsilon (1e-4 against 1e-6)
        assert advantage == pytest.approx(sample.advantages[cut], rel=1e-3)
    after = dict(model.named_parameters())
    assert any(not torch.equal(before[name], after[name].detach()) for name in before)
