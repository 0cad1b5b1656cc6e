"""The learner step on the tiny model: direction of the update, masks, clipping,
gradient accumulation, prefix sharing, atomic saves, and the CLI's errors."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from sprout.cli import main
from sprout.train.batching import LearnerError, families, micro_batches
from sprout.train.samples import Sample
from tests.support.requirements import require_train_extra

require_train_extra()

import torch  # noqa: E402

from sprout.train.learner import Learner, LearnerConfig  # noqa: E402

VOCAB = 400


def sample(
    attempt: int,
    ids: list[int],
    *,
    trained_from: int,
    advantage: float,
    reward: float = 1.0,
    parent: int | None = None,
    prefix: int = 0,
    group: str = "g",
    masked_advantage: float = 0.0,
    rollout: list[float | None] | None = None,
) -> Sample:
    """A sample whose tokens from `trained_from` on are trained with `advantage`."""
    mask = tuple(int(i >= trained_from) for i in range(len(ids)))
    return Sample(
        task_id="t",
        group_id=group,
        attempt_id=attempt,
        parent_id=parent,
        reward=reward,
        input_ids=tuple(ids),
        loss_mask=mask,
        advantages=tuple(advantage if m else masked_advantage for m in mask),
        rollout_logprobs=tuple(rollout) if rollout else (None,) * len(ids),
        prefix_tokens=prefix,
    )


def tokens(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(3, VOCAB) for _ in range(n)]


def tree_batch(masked_advantage: float = 0.0) -> list[Sample]:
    """Two roots and three children, as the training schedule makes them."""
    a, b = tokens(40, 1), tokens(30, 2)
    return [
        sample(1, a, trained_from=8, advantage=1.0, masked_advantage=masked_advantage),
        sample(2, b, trained_from=8, advantage=-1.0, reward=0.0, masked_advantage=masked_advantage),
        sample(3, a[:20] + tokens(15, 3), trained_from=20, advantage=0.5, parent=1, prefix=20),
        sample(4, a[:12] + tokens(25, 4), trained_from=12, advantage=-0.5, parent=1, prefix=12),
        sample(5, b[:16] + tokens(9, 5), trained_from=16, advantage=0.8, parent=2, prefix=16),
    ]


def learner(path: Path, **settings: Any) -> Learner:
    return Learner(path, LearnerConfig(device="cpu", lr=1e-2, **settings))


def logprobs(model: Any, ids: tuple[int, ...]) -> torch.Tensor:
    """log p(token t | tokens before t) for t >= 1."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].float()
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1))[:, 0]


def gradients(model: Any) -> torch.Tensor:
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


def weights(model: Any) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def trained_mean(model: Any, s: Sample) -> float:
    mask = torch.tensor(s.loss_mask[1:], dtype=torch.bool)
    return float(logprobs(model, s.input_ids)[mask].mean())


def test_step_raises_positive_and_lowers_negative_advantage_tokens(tiny_model_path: Path) -> None:
    up = sample(1, tokens(30, 11), trained_from=10, advantage=1.0, reward=1.0)
    down = sample(2, tokens(30, 12), trained_from=10, advantage=-1.0, reward=0.0)
    learn = learner(tiny_model_path)
    before = [trained_mean(learn.model, s) for s in (up, down)]
    stats = learn.step([up, down])
    after = [trained_mean(learn.model, s) for s in (up, down)]
    assert after[0] > before[0] + 1e-3
    assert after[1] < before[1] - 1e-3
    assert stats.tokens_trained == 40 and stats.tokens_in_batch == 60
    assert stats.groups == 1 and stats.zero_variance_groups == 0.0
    assert stats.mean_advantage == pytest.approx(0.0)
    assert stats.grad_norm > 0 and stats.old_logprobs == "recomputed"
    assert json.loads(json.dumps(stats.as_dict()))["tokens_trained"] == 40
    assert "tokens trained 40/60" in stats.line()


def test_tokens_under_mask_zero_contribute_nothing(tiny_model_path: Path) -> None:
    """Advantages written under mask 0 (where the samples should hold 0) change no gradient."""
    clean = learner(tiny_model_path)
    clean.accumulate(tree_batch())
    dirty = learner(tiny_model_path)
    dirty.accumulate(tree_batch(masked_advantage=7.0))
    assert torch.equal(gradients(clean.model), gradients(dirty.model))


def test_clip_fraction_is_zero_when_old_logprobs_are_recomputed(tiny_model_path: Path) -> None:
    stats = learner(tiny_model_path).step(tree_batch())
    assert stats.clip_fraction == 0.0
    assert abs(stats.approx_kl) < 1e-6


def test_rollout_logprobs_far_below_the_model_are_clipped(tiny_model_path: Path) -> None:
    learn = learner(tiny_model_path, old_logprobs="rollout")
    ids = tokens(30, 21)
    current = [None, *(float(v) - 1.0 for v in logprobs(learn.model, tuple(ids)))]
    s = sample(1, ids, trained_from=10, advantage=1.0, rollout=current)
    flat = sample(2, tokens(30, 22), trained_from=10, advantage=0.0, reward=1.0)
    with pytest.raises(LearnerError, match="attempt 2: a trained token has no rollout log-prob"):
        learn.step([s, flat])
    stats = learn.step([s])
    assert stats.old_logprobs == "rollout"
    assert stats.clip_fraction == 1.0  # ratio e^1 > 1 + clip_high on every token
    assert stats.rollout_logprob_gap == pytest.approx(1.0, abs=1e-4)
    assert stats.grad_norm == 0.0  # every token clipped: no gradient


@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
def test_micro_batches_give_the_gradient_of_one_batch(tiny_model_path: Path, agg: str) -> None:
    whole = learner(tiny_model_path, loss_agg=agg, micro_batch_tokens=None)
    one = whole.accumulate(tree_batch())
    split = learner(tiny_model_path, loss_agg=agg, micro_batch_tokens=None, micro_batch_samples=1)
    many = split.accumulate(tree_batch())
    assert one.micro_batches == 1 and many.micro_batches == 2  # two prefix families
    assert torch.allclose(gradients(whole.model), gradients(split.model), atol=1e-6, rtol=1e-4)
    assert one.loss == pytest.approx(many.loss, rel=1e-5)


def test_sharing_prefixes_gives_the_gradient_of_duplicating_them(tiny_model_path: Path) -> None:
    shared = learner(tiny_model_path)
    once = shared.accumulate(tree_batch())
    plain = learner(tiny_model_path, share_prefixes=False)
    twice = plain.accumulate(tree_batch())
    assert torch.allclose(gradients(shared.model), gradients(plain.model), atol=1e-6, rtol=1e-4)
    assert once.tokens_in_batch == twice.tokens_in_batch == twice.tokens_forwarded == 167
    assert once.tokens_forwarded == 167 - (20 + 12 + 16)
    assert once.loss == pytest.approx(twice.loss, rel=1e-5)
    batch = tree_batch()
    for a, b, s in zip(shared.logprobs(batch), plain.logprobs(batch), batch, strict=True):
        assert a is not None and b is not None
        assert torch.allclose(a, b, atol=1e-5)
        assert torch.allclose(a[1:], logprobs(plain.model, s.input_ids), atol=1e-5)


def test_micro_batches_keep_families_whole_and_respect_the_budget() -> None:
    batch = tree_batch()
    lengths = [len(s.input_ids) for s in batch]
    groups = families(batch, share_prefixes=True)
    assert [(f.root, [i for i, _ in f.children]) for f in groups] == [(0, [2, 3]), (1, [4])]
    plan = micro_batches(groups, lengths, max_tokens=50, max_samples=None)
    assert [[f.root for f in mb] for mb in plan] == [[0], [1]]
    alone = families(batch, share_prefixes=False)
    plan = micro_batches(alone, lengths, max_tokens=80, max_samples=None)
    assert all(len(mb) * max(lengths[f.root] for f in mb) <= 80 for mb in plan)


def test_children_that_cannot_share_are_forwarded_in_full() -> None:
    a = tokens(30, 1)
    b = a[:10] + tokens(10, 2)
    batch = [
        sample(1, a, trained_from=5, advantage=1.0),
        sample(2, b, trained_from=10, advantage=1.0, parent=1, prefix=10),
        sample(3, tokens(20, 3), trained_from=10, advantage=1.0, parent=1, prefix=10),  # differs
        sample(4, b[:15] + tokens(5, 4), trained_from=15, advantage=1.0, parent=2, prefix=15),
        sample(5, a[:8] + tokens(8, 5), trained_from=8, advantage=1.0, parent=99, prefix=8),
    ]
    # 3: its "prefix" is not its parent's tokens; 4: a grandchild; 5: its parent is not here
    groups = families(batch, share_prefixes=True)
    assert [(f.root, f.children) for f in groups] == [(0, ((1, 10),)), (2, ()), (3, ()), (4, ())]


def test_bf16_autocast_runs_on_the_cpu(tiny_model_path: Path) -> None:
    stats = learner(tiny_model_path, dtype="bf16").step(tree_batch())
    assert stats.grad_norm > 0 and stats.tokens_trained == 103


def test_samples_the_model_cannot_take_are_refused(tiny_model_path: Path) -> None:
    learn = learner(tiny_model_path)
    with pytest.raises(LearnerError, match="no samples"):
        learn.step([])
    with pytest.raises(LearnerError, match="no trained token in 1 samples"):
        learn.step([sample(9, tokens(5, 1), trained_from=5, advantage=1.0)])
    with pytest.raises(LearnerError, match="attempt 9: 4097 tokens, longer than the model's"):
        learn.step([sample(9, tokens(4097, 1), trained_from=1, advantage=1.0)])
    with pytest.raises(LearnerError, match="attempt 9: token id 400 is outside the model's vocab"):
        learn.step([sample(9, [*tokens(5, 1), VOCAB], trained_from=1, advantage=1.0)])


def test_save_is_complete_and_loads_back(tiny_model_path: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    learn = learner(tiny_model_path)
    learn.step(tree_batch())
    target = learn.save(tmp_path / "step-1")
    loaded = AutoModelForCausalLM.from_pretrained(target)
    assert torch.equal(weights(loaded), weights(learn.model))
    assert AutoTokenizer.from_pretrained(target).chat_template
    assert [p.name for p in tmp_path.iterdir()] == ["step-1"]


def test_the_optimizer_goes_on_from_a_saved_step(tiny_model_path: Path, tmp_path: Path) -> None:
    """Two steps in one learner and one step in each of two learners (the second reading
    what the first saved) end at the same weights: AdamW's moments travel with them."""
    together = learner(tiny_model_path)
    together.step(tree_batch())
    together.step(tree_batch())

    first = learner(tiny_model_path)
    first.step(tree_batch())
    saved = first.save(tmp_path / "step-1")
    assert (saved / "optimizer.pt").is_file()
    second = learner(saved)
    second.step(tree_batch())
    assert torch.allclose(weights(second.model), weights(together.model), atol=1e-7)


def test_a_failed_save_leaves_the_old_weights(
    tiny_model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    learn = learner(tiny_model_path)
    target = learn.save(tmp_path / "model")
    before = (target / "model.safetensors").read_bytes()
    learn.step(tree_batch())

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(learn.tokenizer, "save_pretrained", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        learn.save(target)
    assert (target / "model.safetensors").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model"]
    monkeypatch.undo()
    learn.save(target)  # replaces the old folder
    assert (target / "model.safetensors").read_bytes() != before
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_save_refuses_to_replace_a_folder_that_is_not_a_model(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(LearnerError, match="not a model folder"):
        learner(tiny_model_path).save(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_weights_are_saved_in_the_checkpoints_dtype(tiny_model_path: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    half = tmp_path / "bf16"
    AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.bfloat16).save_pretrained(
        half
    )
    AutoTokenizer.from_pretrained(tiny_model_path).save_pretrained(half)
    learn = learner(half)
    assert next(learn.model.parameters()).dtype == torch.float32  # fp32 master weights
    learn.step(tree_batch())
    saved = learn.save(tmp_path / "out")
    assert json.loads((saved / "config.json").read_text())["dtype"] == "bfloat16"
    loaded = AutoModelForCausalLM.from_pretrained(saved)
    assert next(loaded.parameters()).dtype == torch.bfloat16


# --------------------------------------------------------------------------- the CLI


def write_samples(path: Path, samples: list[Sample]) -> Path:
    from sprout.train.export import write_records

    return write_records(samples, "jsonl", path)


def test_cli_step_logs_the_stats_and_saves(
    tiny_model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = write_samples(tmp_path / "samples.jsonl", tree_batch())
    out = tmp_path / "out"
    args = ["train", "step", "--samples", str(file), "--model", str(tiny_model_path)]
    options = ["--lr", "1e-3", "--device", "cpu", "--micro-batch-tokens", "64"]
    assert main([*args, "--out", str(out), *options]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    stats = json.loads(lines[0])
    assert stats["tokens_trained"] == 103 and stats["micro_batches"] >= 2
    assert lines[1].startswith("loss ") and f"saved {out}" in lines[-1]
    assert (out / "config.json").is_file() and (out / "tokenizer.json").is_file()


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("no model", "model {tmp}/absent: does not exist"),
        ("out not a model", "{tmp}: exists and is not a model folder"),
        ("no samples", "{tmp}/samples.jsonl: no samples"),
        ("too long", "task t attempt 1: 5000 tokens, longer than the model's context (4096"),
        ("bad ids", "task t attempt 1: token id 999 is outside the model's vocabulary (400"),
    ],
)
def test_cli_step_errors(
    tiny_model_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    message: str,
) -> None:
    model = tmp_path / "absent" if case == "no model" else tiny_model_path
    samples = {
        "no model": [sample(1, tokens(10, 1), trained_from=2, advantage=1.0)],
        "out not a model": [sample(1, tokens(10, 1), trained_from=2, advantage=1.0)],
        "no samples": [],
        "too long": [sample(1, tokens(5000, 1), trained_from=2, advantage=1.0)],
        "bad ids": [sample(1, [*tokens(10, 1), 999], trained_from=2, advantage=1.0)],
    }[case]
    file = write_samples(tmp_path / "samples.jsonl", samples)
    out = tmp_path if case == "out not a model" else tmp_path / "out"
    args = ["train", "step", "--samples", str(file), "--model", str(model), "--out", str(out)]
    assert main([*args, "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"sprout train step: {message.format(tmp=tmp_path)}")
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.jsonl"]


def test_the_learner_benchmark_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "learner.json"
    assert main(["bench", "learner", "--quick", "--out", str(out)]) == 0
    (result,) = json.loads(out.read_text())["results"]
    assert result["tokens_ratio"] < 0.6 and result["gradient_max_rel_diff"] < 1e-5
    assert "prefix duplicated" in capsys.readouterr().out


def test_a_step_refuses_samples_another_tokenizer_made(
    tiny_model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sprout.models.fingerprint import tokenizer_fingerprint
    from sprout.train.export import meta_path
    from sprout.train.tiny import build_tiny_model

    other = build_tiny_model(tmp_path / "other", vocab_size=300)
    file = write_samples(tmp_path / "samples.jsonl", tree_batch())
    stamp = {"format": "jsonl", "tokenizer": tokenizer_fingerprint(learner(other).tokenizer)}
    meta_path(file).write_text(json.dumps(stamp))
    args = ["train", "step", "--samples", str(file), "--model", str(tiny_model_path)]
    assert main([*args, "--out", str(tmp_path / "out"), "--device", "cpu"]) == 2
    assert "its token ids were made by tokenizer" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
