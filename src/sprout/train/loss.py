"""The clipped surrogate of one micro-batch, and the figures a step logs from it (torch).

Denominators are counted over the whole batch (`Totals`) before the first
micro-batch, so the gradients accumulated over any split into micro-batches
are those of the whole batch at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from sprout.train.batching import trained_tokens

if TYPE_CHECKING:
    from sprout.train.samples import Sample


@dataclass(frozen=True)
class Totals:
    """Batch-wide denominators, so each micro-batch scales its loss the same way."""

    tokens: int
    """Trained tokens (loss mask 1) in the batch."""
    sequences: int
    """Samples with at least one trained token (the others have no mean to take)."""

    @classmethod
    def of(cls, samples: Sequence[Sample]) -> Totals:
        counts = [trained_tokens(s) for s in samples]
        return cls(sum(counts), sum(1 for c in counts if c))


def micro_batch_loss(
    logp: torch.Tensor,
    old: torch.Tensor,
    mask: torch.Tensor,
    advantages: torch.Tensor,
    rollout: torch.Tensor,
    *,
    clip_low: float,
    clip_high: float,
    loss_agg: str,
    totals: Totals,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """This micro-batch's share of the batch loss, and its sums for the step's figures.

    All tensors are [rows, positions], aligned with the samples' tokens; `old`
    and `rollout` hold NaN where there is no value (only where the mask is 0
    for `old`). The figures stay tensors: one device sync per step, not per figure.
    """
    old = torch.nan_to_num(old, nan=0.0)  # positions the mask drops anyway
    log_ratio = (logp - old) * mask
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    per_token = torch.maximum(unclipped, clipped) * mask
    if loss_agg == "token-mean":
        loss = per_token.sum() / max(totals.tokens, 1)
    elif loss_agg == "seq-mean-token-sum":
        loss = per_token.sum() / max(totals.sequences, 1)
    elif loss_agg == "seq-mean-token-mean":
        per_sequence = per_token.sum(dim=1) / mask.sum(dim=1).clamp(min=1)
        loss = per_sequence.sum() / max(totals.sequences, 1)
    else:
        raise ValueError(f"loss_agg {loss_agg!r}")
    with torch.no_grad():
        known = mask * (~torch.isnan(rollout))
        figures = {
            "loss": loss.detach(),
            "clipped": ((clipped > unclipped).float() * mask).sum(),
            "k3": ((ratio - 1 - log_ratio) * mask).sum(),
            "advantage": (advantages * mask).sum(),
            "gap": ((logp - torch.nan_to_num(rollout)).abs() * known).sum(),
            "gap_n": known.sum(),
        }
    return loss, figures
