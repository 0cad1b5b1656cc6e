"""What the learner forwards: checked samples, prefix families, micro-batches. No torch here.

A *family* is one sequence forwarded in full (its `root`) and the children that
reuse its first tokens: with prefix sharing on, a child whose retained prefix
is token-identical to the start of its parent's sequence is forwarded from the
end of that prefix only, attending to the parent's keys and values. With it
off, every sample is a family of its own and each child's prefix is forwarded
again (what a plain Hugging Face trainer does). Which prefix is shared is
`sprout.tree.records.shares_prefix`, the home of prefix-once tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sprout.errors import SproutError
from sprout.train.credit import zero_variance
from sprout.tree import shares_prefix

if TYPE_CHECKING:
    from sprout.train.samples import Sample


class LearnerError(SproutError):
    """Input the learner cannot train on (or a model it cannot load): one line, naming it."""


def sample_name(sample: Sample) -> str:
    return f"task {sample.task_id} attempt {sample.attempt_id}"


def check_samples(samples: Sequence[Sample], *, context: int, vocab: int) -> None:
    """Refuse, naming the task and attempt, what would crash the model or train garbage.

    `context` is the model's `max_position_embeddings`; `vocab` its number of
    input embeddings (an id beyond it means the samples came from another tokenizer).
    """
    if not samples:
        raise LearnerError("no samples to train on")
    for sample in samples:
        name = sample_name(sample)
        n = len(sample.input_ids)
        if n == 0:
            raise LearnerError(f"{name}: empty input_ids")
        for field in ("loss_mask", "advantages", "rollout_logprobs"):
            if len(getattr(sample, field)) != n:
                raise LearnerError(
                    f"{name}: {field} has {len(getattr(sample, field))} entries for {n} input_ids"
                )
        if n > context:
            raise LearnerError(
                f"{name}: {n} tokens, longer than the model's context "
                f"({context}, max_position_embeddings)"
            )
        low, high = min(sample.input_ids), max(sample.input_ids)
        if low < 0 or high >= vocab:
            bad = low if low < 0 else high
            raise LearnerError(
                f"{name}: token id {bad} is outside the model's vocabulary ({vocab} ids): "
                "samples made with another tokenizer?"
            )
        if sample.loss_mask[0]:
            raise LearnerError(f"{name}: loss_mask is 1 on the first token, which nothing predicts")
        if not 0 <= sample.prefix_tokens <= n:
            raise LearnerError(f"{name}: prefix_tokens {sample.prefix_tokens} for {n} tokens")
    if not any(trained_tokens(sample) for sample in samples):
        raise LearnerError(f"no trained token in {len(samples)} samples (every loss mask is 0)")


def trained_tokens(sample: Sample) -> int:
    return sum(1 for m in sample.loss_mask if m)


def zero_variance_fraction(samples: Sequence[Sample]) -> tuple[int, float]:
    """(groups, fraction of them whose samples all have the same reward).

    Such a group gives GRPO no signal: its advantages are 0 and its tokens only
    dilute a token-mean loss.
    """
    rewards: dict[str, list[float]] = {}
    for sample in samples:
        rewards.setdefault(sample.group_id, []).append(float(sample.reward))
    if not rewards:
        return 0, 0.0
    flat = sum(1 for values in rewards.values() if zero_variance(values))
    return len(rewards), flat / len(rewards)


@dataclass(frozen=True)
class Family:
    """A sequence forwarded in full, and the children forwarded after its shared prefix."""

    root: int
    """Index of the sample forwarded in full."""
    children: tuple[tuple[int, int], ...] = ()
    """(sample index, shared prefix length) of each child; the prefix is never forwarded again."""

    def members(self) -> list[int]:
        return [self.root, *(index for index, _ in self.children)]


def families(samples: Sequence[Sample], *, share_prefixes: bool) -> list[Family]:
    """Group the samples that need a forward pass into families.

    A sample with no trained token is left out unless a child shares its prefix.
    A child joins its parent's family when the parent is in the batch and is not
    itself a sharing child (one level: the training schedule's children), the
    prefix is at least one token, and its tokens equal the parent's (the
    token-exact invariant; a child that breaks it is forwarded in full).
    """
    by_attempt = {(s.group_id, s.attempt_id): i for i, s in enumerate(samples)}
    children: dict[int, list[tuple[int, int]]] = {}
    is_child: set[int] = set()
    if share_prefixes:
        for index, sample in enumerate(samples):
            parent = by_attempt.get((sample.group_id, sample.parent_id))
            p = sample.prefix_tokens
            if parent is None or parent == index or not trained_tokens(sample):
                continue
            if not shares_prefix(samples[parent].input_ids, sample.input_ids, p):
                continue
            children.setdefault(parent, []).append((index, p))
            is_child.add(index)
        for parent in list(children):
            if parent in is_child:  # a grandchild: forwarded in full instead
                for index, _ in children.pop(parent):
                    is_child.discard(index)
    out = []
    for index, sample in enumerate(samples):
        if index in is_child:
            continue
        kids = tuple(children.get(index, ()))
        if trained_tokens(sample) or kids:
            out.append(Family(index, kids))
    return out


def padded_tokens(group: Sequence[Family], lengths: Sequence[int]) -> int:
    """Tokens a micro-batch forwards, padding included: roots padded to the longest
    root, children's suffixes to the longest suffix."""
    roots = [lengths[f.root] for f in group]
    suffixes = [lengths[i] - p for f in group for i, p in f.children]
    return len(roots) * max(roots, default=0) + len(suffixes) * max(suffixes, default=0)


def micro_batches(
    group: Sequence[Family],
    lengths: Sequence[int],
    *,
    max_tokens: int | None,
    max_samples: int | None,
) -> list[list[Family]]:
    """Pack families, longest first, into micro-batches under both limits.

    Longest first keeps padding small. A family is never split (its children
    need its keys and values in the same pass), so one that alone exceeds the
    limits is a micro-batch by itself.
    """
    ordered = sorted(group, key=lambda f: (-lengths[f.root], f.root))
    batches: list[list[Family]] = []
    current: list[Family] = []
    for family in ordered:
        candidate = [*current, family]
        over_tokens = max_tokens is not None and padded_tokens(candidate, lengths) > max_tokens
        count = sum(len(f.members()) for f in candidate)
        over_samples = max_samples is not None and count > max_samples
        if current and (over_tokens or over_samples):
            batches.append(current)
            candidate = [family]
        current = candidate
    if current:
        batches.append(current)
    return batches
