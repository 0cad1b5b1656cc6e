"""A group's rollouts as verl's `AgentLoopOutput` fields, one per sample verl asked for.

Each output is one attempt's `Sample` (`sprout.train.samples`): its ids are the tokens
its context held, the parent's up to the boundary then its own, never re-rendered; its
`response_mask` is 1 exactly where the sample's loss mask is (the rollout's own actor
turns and its starting turn, never a retained prefix, an observation or the analysis).

verl pads every prompt to `rollout.prompt_length` and every response to
`rollout.response_length`, and cannot hold more. The split between the two is free (only
the mask trains), so it is made at the first trained token, or earlier when the prompt
would not fit. A sample that fits in neither way, an attempt with no sample, and every
slot of a group that did not finish (an attempt ended in error: an error is not a zero,
and the group lacks that reward) are outputs that train nothing: all-zero masks, and
`extra_fields["sprout_error"]` saying why. Their `reward_score` is their own reward when
they have one, else the mean of the group's rewards, so that no error reads as a failure
and the group's mean is what its played attempts make it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sprout.train.samples import Sample


@dataclass(frozen=True)
class Lengths:
    """verl's fixed widths: `rollout.prompt_length` and `rollout.response_length`."""

    prompt: int
    response: int


@dataclass(frozen=True)
class Played:
    """One slot's rollout: its sample (None when the attempt has none), why it trains
    nothing (None when it may train), and where it was played."""

    sample: Sample | None
    error: str | None
    reward: float | None
    attempt_id: int | None
    parent_id: int | None


def slot_outputs(
    played: Sequence[Played],
    *,
    prompt_ids: Sequence[int],
    end_of_turn: int,
    lengths: Lengths,
    logprobs: bool,
    run: str,
) -> list[dict[str, Any]]:
    """One `AgentLoopOutput` field dict per slot. `prompt_ids`: the task's prompt as ids, the
    ids of an output whose rollout has none; `logprobs`: verl asked for log-probs
    (`rollout.calculate_log_probs`), so every output carries them, 0.0 where the engine gave
    none (the context, a reviewer-written starting turn), as verl's own padding does;
    `end_of_turn` is the one response token of an output that has no other."""
    rewards = [p.reward for p in played if p.reward is not None]
    mean = sum(rewards) / len(rewards) if rewards else 0.0
    outputs = []
    for slot in played:
        reward = slot.reward if slot.reward is not None else mean
        error = slot.error
        sample = slot.sample
        trains = sample is not None and error is None and any(sample.loss_mask)
        if trains:
            assert sample is not None
            error = _overlong(sample, lengths)
            trains = error is None
        if trains:
            assert sample is not None
            fields = _trained(sample, lengths)
        else:
            ids = list(sample.input_ids) if sample is not None else list(prompt_ids)
            ids = ids[: lengths.prompt + lengths.response]
            cut = min(len(ids), lengths.prompt)
            response = ids[cut:] or [end_of_turn]
            fields = {
                "prompt_ids": ids[:cut],
                "response_ids": response,
                "response_mask": [0] * len(response),
                "response_logprobs": [0.0] * len(response),
            }
        if not logprobs:
            fields.pop("response_logprobs")
        fields |= {
            "reward_score": reward,
            "num_turns": sample.turns if sample is not None else 0,
            "metrics": {
                "generate_sequences": sample.generate_s if sample is not None else 0.0,
                "tool_calls": sample.tool_s if sample is not None else 0.0,
            },
            "extra_fields": {
                "sprout_error": error,
                "sprout_run": run,
                "sprout_attempt_id": slot.attempt_id,
                "sprout_parent_id": slot.parent_id,
                "sprout_prefix_tokens": sample.prefix_tokens if sample is not None else 0,
            },
        }
        outputs.append(fields)
    return outputs


def _overlong(sample: Sample, lengths: Lengths) -> str | None:
    """Why `sample` cannot be one of verl's rows, or None."""
    total = len(sample.input_ids)
    if total > lengths.prompt + lengths.response:
        return (
            f"attempt {sample.attempt_id}: {total} tokens, more than rollout.prompt_length "
            f"{lengths.prompt} + rollout.response_length {lengths.response}; raise them"
        )
    first = next(i for i, mask in enumerate(sample.loss_mask) if mask)
    if total - first > lengths.response:
        return (
            f"attempt {sample.attempt_id}: {total - first} tokens from its first trained one, "
            f"more than rollout.response_length {lengths.response}; raise it"
        )
    return None


def _trained(sample: Sample, lengths: Lengths) -> dict[str, Any]:
    """The fields of a sample that fits: split at its first trained token, or where the
    prompt fills `lengths.prompt` when the context before that token is longer."""
    first = next(i for i, mask in enumerate(sample.loss_mask) if mask)
    cut = min(first, lengths.prompt)
    ids, mask = sample.input_ids, sample.loss_mask
    return {
        "prompt_ids": list(ids[:cut]),
        "response_ids": list(ids[cut:]),
        "response_mask": list(mask[cut:]),
        "response_logprobs": [lp or 0.0 for lp in sample.rollout_logprobs[cut:]],
    }
