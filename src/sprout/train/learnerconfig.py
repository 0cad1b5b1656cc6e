"""What a learner step is told (`LearnerConfig`, the `[learner]` table) and what it reports.

Apart from the learner itself, so that reading settings and logs never needs torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sprout.config import read_table

LossAggregation = Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"]


class LearnerConfig(BaseModel):
    """How the learner turns a batch of samples into one optimizer step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    clip_low: float = Field(0.2, ge=0, lt=1)
    """Ratios below 1 - clip_low stop pulling a negative-advantage token down (PPO's ε)."""
    clip_high: float = Field(0.28, ge=0)
    """Ratios above 1 + clip_high stop pushing a positive-advantage token up. DAPO's
    "clip-higher" (0.28 > 0.2) leaves low-probability tokens more room to rise,
    which keeps entropy from collapsing."""
    loss_agg: LossAggregation = "token-mean"
    """`token-mean`: every trained token of the batch weighs the same (DAPO; long
    replies are not discounted). `seq-mean-token-sum`: sum per sequence, mean over
    sequences (Dr.GRPO's unbiased form up to a constant). `seq-mean-token-mean`:
    mean per sequence, then over sequences (the original GRPO)."""
    old_logprobs: Literal["recompute", "rollout", "auto"] = "recompute"
    """Where π_old comes from. `recompute`: a no-grad pass with the current weights
    before the update (ratio 1 on this step: clipping only bounds later reuse).
    `rollout`: the samples' `rollout_logprobs` (the engine that sampled them;
    every trained token must have one). `auto`: rollout when all are given, else
    recompute. Rollout log-probs make the ratio correct for the engine/trainer
    mismatch (different kernels, precision) at the price of trusting the engine."""
    temperature: float = Field(1.0, gt=0)
    """Logits are divided by this before the softmax: set it to the sampling
    temperature when the rollout log-probs were computed at that temperature."""
    micro_batch_tokens: int | None = Field(4096, ge=1)
    """Most tokens (padding included) one forward pass holds; gradients accumulate
    over micro-batches. A prefix family longer than this is a micro-batch alone."""
    micro_batch_samples: int | None = Field(None, ge=1)
    """Most sequences in one micro-batch (None: only the token limit applies)."""
    share_prefixes: bool = True
    """Forward each child's retained prefix once, through its parent's keys and
    values, instead of again in every child (same gradient, fewer tokens). Models
    with sliding-window or recurrent layers forward every prefix (a note says so)."""
    lr: float = Field(1e-6, gt=0)
    """AdamW learning rate; 1e-6 is the usual GRPO rate for billion-parameter models."""
    weight_decay: float = Field(0.01, ge=0)
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = Field(1e-8, gt=0)
    max_grad_norm: float | None = Field(1.0, gt=0)
    """Clip the global gradient norm to this (None: no clipping; the norm is still logged)."""
    dtype: Literal["auto", "fp32", "bf16"] = "auto"
    """Compute precision. `auto`: bf16 autocast on a CUDA device that supports it,
    fp32 elsewhere (CPU bf16 is slow and rarely what a test wants)."""
    param_dtype: Literal["fp32", "bf16"] = "fp32"
    """Weights and AdamW state. fp32 master weights keep small updates from
    vanishing under bf16 rounding; bf16 halves the memory."""
    device: str = "auto"
    """`auto` (cuda when available, else cpu), `cpu`, `cuda`, `cuda:1`, ..."""

    @model_validator(mode="after")
    def _check(self) -> LearnerConfig:
        if not 0 <= self.betas[0] < 1 or not 0 <= self.betas[1] < 1:
            raise ValueError(f"betas {self.betas}: each must be in [0, 1)")
        return self

    @classmethod
    def from_file(cls, path: str | Path) -> LearnerConfig:
        """Read the `[learner]` table of a TOML file; errors name the file and the field."""
        return read_table(path, "learner", cls)


@dataclass(frozen=True)
class StepStats:
    """What one learner step did: the figures GRPO trainers log."""

    loss: float
    """The aggregated clipped-surrogate loss (before the update)."""
    clip_fraction: float
    """Share of trained tokens whose clipped term was the larger (gradient cut off)."""
    approx_kl: float
    """k3 estimate of KL(π_old ‖ π) over trained tokens, for monitoring only (not in the loss)."""
    mean_advantage: float
    """Mean advantage over trained tokens."""
    grad_norm: float
    """Global gradient norm before clipping."""
    zero_variance_groups: float
    """Share of groups whose samples all have the same reward (no GRPO signal)."""
    groups: int
    samples: int
    tokens_trained: int
    """Tokens with loss mask 1."""
    tokens_in_batch: int
    """All tokens of all samples, each sample counted in full."""
    tokens_forwarded: int
    """Tokens the update's forward pass computed, without padding (shared prefixes once)."""
    tokens_padded: int
    """The same with padding: what the micro-batches' tensors held."""
    micro_batches: int
    old_logprobs: str
    """`recomputed` or `rollout`."""
    rollout_logprob_gap: float | None
    """Mean |recomputed - rollout| log-prob over trained tokens that have both (None
    when none does): large values mean the samples do not match this model."""
    lr: float
    step_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One readable line for a log."""
        gap = "" if self.rollout_logprob_gap is None else f" gap {self.rollout_logprob_gap:.3g}"
        return (
            f"loss {self.loss:.4g}  clip {self.clip_fraction:.3f}  kl {self.approx_kl:.3g}  "
            f"adv {self.mean_advantage:+.3g}  grad {self.grad_norm:.3g}  "
            f"zero-var groups {self.zero_variance_groups:.0%} of {self.groups}  "
            f"tokens trained {self.tokens_trained}/{self.tokens_in_batch} "
            f"(forwarded {self.tokens_forwarded})  {self.micro_batches} micro-batch"
            f"{'' if self.micro_batches == 1 else 'es'}  "
            f"old log-probs {self.old_logprobs}{gap}  {self.step_seconds:.2f} s"
        )
