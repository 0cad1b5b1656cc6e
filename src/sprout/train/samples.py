"""Token-exact training samples from the rollout tree: what the learner and the exporters read.

A sample is one rollout of a group as token ids: the retained prefix (the
parent's turns up to the boundary, context only), the starting turn and the
continuation. Its ids are concatenated from the ids stored with each turn
(`RolloutTree.token_path`), never re-rendered from messages, so a branch's prefix
is its parent's to the token.

Loss mask: 1 exactly on the tokens this rollout's policy produced, the
`completion_ids` of its own actor turns, and of its reviewer-written starting turn
when `train_starting_turn` (the default, the paper's choice: the policy learns the
corrective turn from its ordinary context). 0 on the retained prefix (trained
once, in the rollout that produced it), on every context token (prompt,
observations, chat-template glue) and on the starting turn otherwise.

The analysis and the reviewer's prompt and reasons never enter a sample: samples
are built from turns only, and `check_role_text` refuses, with `RoleTextError`,
a turn that is not an actor reply or a branch's own starting turn, or any turn or
decoded sample that holds a stored analysis or review text.

A batch's `GroupReport` counts what its samples hold, so it lives with them: groups know
nothing of samples.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sprout.errors import SproutError
from sprout.roles import Analysis, Review
from sprout.train.credit import EPSILON, Credit, GroupCredit
from sprout.train.groups import Group, finished_groups
from sprout.tree import Attempt, RolloutTree, TreeError, Turn

Overlong = Literal["error", "drop"]
Decode = Callable[[Sequence[int]], str]
"""Token ids to text, e.g. `tokenizer.decode`: lets the role-text check read the ids."""

ROLE_TEXT_MIN_CHARS = 40
"""Shorter analysis or review texts ("Nothing.") could occur anywhere by chance: not checked."""


class SampleError(SproutError, ValueError):
    """A run that gives no trainable samples, or a rollout that cannot become one."""


class RoleTextError(SampleError):
    """Analysis or reviewer text found where only the actor's context may be."""


@dataclass(frozen=True)
class Sample:
    """One rollout of a group, as the learner reads it; every per-token tuple is as long as
    `input_ids`."""

    task_id: str
    group_id: str
    """One GRPO group: a task's rollouts under one method (`TASK/METHOD`)."""
    attempt_id: int
    parent_id: int | None
    reward: float
    input_ids: tuple[int, ...]
    """The retained prefix, then the starting turn and the continuation."""
    loss_mask: tuple[int, ...]
    """1 exactly on the tokens this rollout's policy produced (see the module docstring)."""
    advantages: tuple[float, ...]
    """Per token, from the group's credit; 0 where the loss mask is 0."""
    rollout_logprobs: tuple[float | None, ...]
    """The rollout engine's log-probability of each completion token, where it kept one."""
    prefix_tokens: int
    """Leading tokens retained from the parent (all masked): 0 for a root."""
    turns: int = 0
    """Turns of this rollout's own (its starting turn included), not the retained ones."""
    generate_s: float = 0.0
    """Seconds its own turns spent before their calls ran: asking the model, parsing."""
    tool_s: float = 0.0
    """Seconds its own turns' shell calls ran."""


@dataclass(frozen=True)
class GroupReport:
    """What a batch holds: the figures a GRPO user checks before trusting a step."""

    groups: int
    zero_variance_groups: int
    samples: int
    tokens_trained: int
    """Tokens with loss mask 1: each produced token once."""
    tokens_in_batch: int
    """Every token of every sample: what the model reads, retained prefixes included."""
    unfinished: tuple[str, ...] = ()
    """Groups left out because some attempt was still running or unverified."""
    dropped: tuple[str, ...] = ()
    """Samples left out as longer than `max_length` (with `overlong="drop"`)."""

    @property
    def zero_variance_fraction(self) -> float:
        return self.zero_variance_groups / self.groups if self.groups else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "groups": self.groups,
            "zero_variance_groups": self.zero_variance_groups,
            "zero_variance_fraction": self.zero_variance_fraction,
            "samples": self.samples,
            "tokens_trained": self.tokens_trained,
            "tokens_in_batch": self.tokens_in_batch,
            "unfinished": list(self.unfinished),
            "dropped": list(self.dropped),
        }

    def describe(self) -> str:
        """One line for a log."""
        line = (
            f"{self.groups} groups ({self.zero_variance_groups} with zero variance, "
            f"{100 * self.zero_variance_fraction:.0f}%), {self.samples} samples, "
            f"{self.tokens_trained:,} of {self.tokens_in_batch:,} tokens trained"
        )
        if self.unfinished:
            line += f"; {len(self.unfinished)} unfinished groups skipped"
        if self.dropped:
            line += f"; {len(self.dropped)} samples dropped as too long"
        return line


def report(
    groups: Sequence[Group],
    samples: Sequence[Sample],
    *,
    unfinished: Sequence[str] = (),
    dropped: Sequence[str] = (),
) -> GroupReport:
    """The report of a batch of `samples` made from `groups`."""
    return GroupReport(
        groups=len(groups),
        zero_variance_groups=sum(group.zero_variance for group in groups),
        samples=len(samples),
        tokens_trained=sum(sum(sample.loss_mask) for sample in samples),
        tokens_in_batch=sum(len(sample.input_ids) for sample in samples),
        unfinished=tuple(unfinished),
        dropped=tuple(dropped),
    )


@dataclass(frozen=True)
class Batch:
    """The samples of a run's finished groups, group by group, and what they hold."""

    samples: tuple[Sample, ...]
    report: GroupReport


def build_samples(
    tree: RolloutTree,
    *,
    methods: Sequence[str] | None = None,
    credit: Credit = "grpo",
    epsilon: float = EPSILON,
    train_starting_turn: bool = True,
    max_length: int | None = None,
    overlong: Overlong = "error",
    decode: Decode | None = None,
) -> Batch:
    """Samples of every finished group of the run (of `methods`, default all).

    `max_length`: a sample with more tokens raises SampleError naming it, or with
    `overlong="drop"` is left out and named in the report (its reward still counts
    in its group's credit). `decode`, when given, also checks the decoded ids for role
    text. A rollout that produced no trained token (no turn of its own, or only a starting
    turn that is not trained) gives no sample; its reward still counts in its group.
    """
    groups, unfinished = finished_groups(tree, methods)
    if not groups:
        why = "; ".join(unfinished) if unfinished else "it holds no verified attempt"
        raise SampleError(f"{tree.database}: no finished group to train on ({why})")
    samples: list[Sample] = []
    dropped: list[str] = []
    texts_by_group: dict[str, list[str]] = {}
    for group in groups:
        texts = texts_by_group[group.group_id] = role_texts(tree, group)
        for attempt, sample in group_samples(
            tree, group, credit, epsilon, train_starting_turn, texts
        ):
            if sample is None or not any(sample.loss_mask):
                continue
            if max_length is not None and len(sample.input_ids) > max_length:
                where = (
                    f"task {attempt.task_id!r}, attempt {attempt.id}: {len(sample.input_ids)} "
                    f"tokens, longer than max_length {max_length}"
                )
                if overlong == "error":
                    raise SampleError(f"{where}; raise max_length or pass overlong='drop'")
                dropped.append(where)
                continue
            samples.append(sample)
    if decode is not None:
        _check_decoded(samples, texts_by_group, decode)
    return Batch(tuple(samples), report(groups, samples, unfinished=unfinished, dropped=dropped))


def group_samples(
    tree: RolloutTree,
    group: Group,
    credit: Credit = "grpo",
    epsilon: float = EPSILON,
    train_starting_turn: bool = True,
    texts: Sequence[str] | None = None,
) -> list[tuple[Attempt, Sample | None]]:
    """Each attempt of `group` with its sample, in the group's order: None for a rollout
    with no turn of its own (a child that ended at its boundary), an all-zero loss mask for
    one whose own tokens are not trained. An engine that wants one output per rollout
    (verl's agent loop) reads every entry; `build_samples` keeps those that train. `texts`:
    the group's `role_texts`, when the caller has them."""
    texts = role_texts(tree, group) if texts is None else texts
    group_credit = GroupCredit(group.leaves(), credit, epsilon=epsilon)
    found: list[tuple[Attempt, Sample | None]] = []
    for attempt in group.attempts:
        path = _token_path(tree, attempt)
        if not any(turn.attempt_id == attempt.id for _, _, turn in path):
            found.append((attempt, None))
            continue
        check_role_text(tree, attempt, [turn for _, _, turn in path], texts)
        found.append((attempt, _sample(attempt, group, path, group_credit, train_starting_turn)))
    return found


def _token_path(
    tree: RolloutTree, attempt: Attempt
) -> list[tuple[tuple[int, ...], tuple[int, ...], Turn]]:
    try:
        return tree.token_path(attempt)
    except TreeError as error:
        raise SampleError(f"task {attempt.task_id!r}: {error}") from None


def _sample(
    attempt: Attempt,
    group: Group,
    path: list[tuple[tuple[int, ...], tuple[int, ...], Turn]],
    credit: GroupCredit,
    train_starting_turn: bool,
) -> Sample:
    ids: list[int] = []
    mask: list[int] = []
    advantages: list[float] = []
    logprobs: list[float | None] = []
    prefix = 0
    own_turns = [turn for _, _, turn in path if turn.attempt_id == attempt.id]
    tool_s = sum(call.duration_s for turn in own_turns for call in turn.calls)
    for context, completion, turn in path:
        own = turn.attempt_id == attempt.id
        trained = own and (turn.author == "actor" or train_starting_turn)
        known = turn.completion_logprobs
        if known is not None and len(known) != len(completion):
            raise SampleError(
                f"task {attempt.task_id!r}, attempt {attempt.id}: turn "
                f"{turn.attempt_id}:{turn.index} stores {len(known)} log-probs for "
                f"{len(completion)} completion ids"
            )
        value = credit(attempt.id, turn.index) if trained else 0.0
        ids += [*context, *completion]
        mask += [0] * len(context) + [int(trained)] * len(completion)
        advantages += [0.0] * len(context) + [value] * len(completion)
        logprobs += [None] * len(context) + (list(known) if known else [None] * len(completion))
        if not own:
            prefix += len(context) + len(completion)
    return Sample(
        task_id=attempt.task_id,
        group_id=group.group_id,
        attempt_id=attempt.id,
        parent_id=attempt.parent_id,
        reward=float(attempt.reward or 0.0),
        input_ids=tuple(ids),
        loss_mask=tuple(mask),
        advantages=tuple(advantages),
        rollout_logprobs=tuple(logprobs),
        prefix_tokens=prefix,
        turns=len(own_turns),
        generate_s=max(0.0, sum(turn.duration_s for turn in own_turns) - tool_s),
        tool_s=tool_s,
    )


def _normal(text: str) -> str:
    return " ".join(text.split())


def role_texts(tree: RolloutTree, group: Group) -> list[str]:
    """The stored analysis and review texts of `group`'s task that must never reach a sample:
    why_failed, keep and plan reasons of at least ROLE_TEXT_MIN_CHARS, whitespace-normalised.
    A text that the actor legitimately saw (in the task prompt, or quoted by the reviewer in
    a starting turn) is not one of them."""
    found: list[str] = []
    for body in tree.analyses(group.task_id).values():
        analysis = Analysis.from_json(body)
        found += [analysis.why_failed, analysis.keep]
    for body in tree.reviews(group.task_id).values():
        found += [plan.reason for plan in Review.from_json(body).plans]
    seen = [
        _normal(str(message.get("content", "")))
        for attempt in group.attempts
        for message in attempt.prefix
    ]
    seen += [_normal(a.starting_turn) for a in tree.attempts(group.task_id) if a.starting_turn]
    texts = {_normal(text) for text in found}
    return sorted(
        text
        for text in texts
        if len(text) >= ROLE_TEXT_MIN_CHARS and not any(text in legit for legit in seen)
    )


def check_role_text(
    tree: RolloutTree, attempt: Attempt, path: Sequence[Turn], texts: Sequence[str]
) -> None:
    """Refuse a path that holds anything but actor replies and branches' own starting turns,
    or whose turns hold one of `texts` (see `role_texts`)."""
    where = f"task {attempt.task_id!r}, attempt {attempt.id}"
    for turn in path:
        if turn.author != "actor":
            producer = attempt if turn.attempt_id == attempt.id else tree.attempt(turn.attempt_id)
            if (
                turn.author != "reviewer"
                or turn.index != producer.boundary + 1
                or turn.text != producer.starting_turn
            ):
                raise RoleTextError(
                    f"{where}: turn {turn.attempt_id}:{turn.index} by {turn.author} is not "
                    "that branch's starting turn; only actor replies and starting turns may "
                    "enter a sample"
                )
        contents = [turn.text, *(str(m.get("content", "")) for m in turn.messages)]
        for content in map(_normal, contents):
            leaked = next((text for text in texts if text in content), None)
            if leaked is not None:
                raise RoleTextError(
                    f"{where}: turn {turn.attempt_id}:{turn.index} holds analysis or review "
                    f"text ({leaked[:60]!r}...); role outputs must never enter the context"
                )


def assert_no_role_text(samples: Sequence[Sample], tree: RolloutTree, decode: Decode) -> None:
    """Refuse samples whose decoded ids hold a stored analysis or review text of their task
    (see `role_texts`): the check on the ids themselves, whatever the turns' texts say."""
    groups, _ = finished_groups(tree)
    _check_decoded(samples, {g.group_id: role_texts(tree, g) for g in groups}, decode)


def _check_decoded(
    samples: Sequence[Sample], texts: Mapping[str, Sequence[str]], decode: Decode
) -> None:
    for sample in samples:
        text = _normal(decode(sample.input_ids))
        leaked = next((t for t in texts.get(sample.group_id, ()) if t in text), None)
        if leaked is not None:
            raise RoleTextError(
                f"task {sample.task_id!r}, attempt {sample.attempt_id}: its token ids decode "
                f"to analysis or review text ({leaked[:60]!r}...)"
            )
