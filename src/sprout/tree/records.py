"""The records of the rollout tree: attempts, turns, their calls and the model calls.

Plain frozen data, shared by the tree (which reads and grows them) and its database
(which persists them); neither module owns the other's half. `sprout.tree`
exports them, so callers import them from there.

Also the home of *prefix-once tokens*, the paper's way of counting a shared
prefix once: `count_tokens` charges the model calls of a tree so (what
`RolloutTree.tokens` reports), and `shares_prefix` is the test the learner uses
to forward a branch's retained prefix once (`sprout.train.batching.families`).
And of two rules on these records: what a pass is (`passes`, behind `Attempt.passed`
and `failed`), and which boundaries an attempt has (`boundary_problem`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sprout.workspace import Change

Message = dict[str, Any]
Author = Literal["actor", "reviewer"]
Role = Literal["actor", "analyst", "reviewer"]
AttemptStatus = Literal["running", "submitted", "limit", "error", "stopped"]
"""`stopped`: its schedule needed no more turns (another attempt had passed)."""
Fault = Literal["model", "sandbox", "lost", "sprout", "verifier"]
"""Why an attempt ended `error`: the model server failed (no reply after retries), the
sandbox failed, the checkpoint it was to continue from was lost with its node (no store
holds it any more), sprout itself crashed (sprout's own fault), or the verifier could not
give a verdict (its fork or runner could not start, it left no result the task requires).
The model and sandbox faults are continued by `--resume`, and a verifier's is verified
again; a lost root is restarted from checkpoint 0 by a new root (`Attempt.restarts`)."""


@dataclass(frozen=True)
class Played:
    """How an attempt's turns ended (`submitted` or `limit`, and why), kept when its verifier
    then failed, so that verifying it again restores them."""

    status: AttemptStatus
    reason: str | None


PASS_REWARD = 1.0
"""The reward of a pass. A verifier may score partial success (or more): only this counts
as solving the task; anything below it, once verified, is a failure to branch from."""


def passes(reward: float | None) -> bool:
    """Whether a verifier's `reward` is a pass: the one test for an attempt's reward
    (`Attempt.passed`) and for a verdict not yet stored on one."""
    return reward == PASS_REWARD


def boundary_problem(attempt_id: int, boundary: object, last: int) -> str | None:
    """Why `boundary` is no turn boundary of attempt `attempt_id`, whose last turn is `last`
    (None when it is one: 0..last). One rule and one wording for the tree's refusals and
    the reviewer's notes to its model, so a user and a model are told the same thing."""
    if isinstance(boundary, int) and not isinstance(boundary, bool) and 0 <= boundary <= last:
        return None
    return f"boundary {boundary!r} out of range for attempt {attempt_id} (0..{last})"


@dataclass(frozen=True)
class CallRecord:
    """One shell call of a turn and what it printed."""

    command: str
    output: str
    exit_code: int | None
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0


@dataclass(frozen=True)
class Turn:
    """One model reply (or starting turn) with the observations of its calls."""

    attempt_id: int
    index: int
    """Position in the attempt's context: the boundary right after this turn is `index`."""
    author: Author
    text: str
    calls: tuple[CallRecord, ...]
    messages: tuple[Message, ...]
    """Exactly the messages this turn appended to the context (reply, then observations)."""
    checkpoint: str
    """The sandbox layer after this turn's calls: the filesystem half of checkpoint `index`."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    estimated: bool = False
    entropy: float | None = None
    """Mean per-token entropy of the reply, when the model returned log-probabilities."""
    duration_s: float = 0.0
    format_error: bool = False
    context_ids: tuple[int, ...] | None = None
    """Token ids appended to the context after the previous turn's `completion_ids` and before
    this reply: a root's first turn holds the whole initial prompt; later turns the previous
    turn's observations, any closing tokens of its reply the model did not generate, and the
    generation prompt. None when the model does not keep token ids."""
    completion_ids: tuple[int, ...] | None = None
    """This reply's token ids as generated (the stop token included); a reviewer's starting
    turn tokenized as a reply ending with the end-of-turn token."""
    completion_logprobs: tuple[float, ...] | None = None
    """The rollout model's log-probabilities of `completion_ids` (None for reviewer turns)."""
    changes: tuple[Change, ...] | None = None
    """The paths this turn's layer added, modified or deleted (with sizes), recorded when it
    was sealed; None for a turn stored before sprout recorded them (see `RolloutTree.changes`)."""


@dataclass(frozen=True)
class Attempt:
    """A sequence of turns: a root (from checkpoint 0) or a branch of another attempt."""

    id: int
    task_id: str
    parent_id: int | None
    boundary: int
    """The parent's turn boundary this attempt starts from (0 = the untouched task)."""
    kind: Literal["root", "branch"]
    status: AttemptStatus = "running"
    end_reason: str | None = None
    fault: Fault | None = None
    """With status `error`: what failed instead of the model (never a failed test)."""
    played: Played | None = None
    """With fault `verifier`: how its turns had ended before the verifier failed."""
    round: int = 0
    method: str = ""
    guided: bool = False
    """True when a reviewer wrote the starting turn."""
    starting_turn: str | None = None
    """The *starting turn*: the turn that replaces the parent's turn `boundary + 1`, in the
    actor's voice (reasoning, then shell calls); None for a root and an unguided branch.
    Its life: the reviewer writes it (`sprout.roles.reviewer`, `BranchPlan.starting_turn`),
    the tree stores it here (`RolloutTree.branch`), the actor plays its calls as the
    branch's first turn, authored `reviewer` (`sprout.agent.actor`), and tokenises it as a
    reply (`sprout.agent.token_ids`), and the learner trains it as an actor turn
    (`sprout.train.samples`, `train_starting_turn`)."""
    prefix: tuple[Message, ...] = ()
    """Roots only: the messages before the first turn (system prompt, task)."""
    base_checkpoint: str | None = None
    """Roots only: the task's untouched sandbox (checkpoint 0)."""
    restarts: int | None = None
    """Roots only: the attempt this root restarts from checkpoint 0, because the checkpoint
    that attempt would have continued from was lost with its node (its fault `lost`)."""
    reward: float | None = None
    diagnostics: dict[str, Any] | None = None
    patch: str | None = None
    created: float = 0.0

    @property
    def passed(self) -> bool:
        """Verified, with the reward of a pass (`passes`)."""
        return passes(self.reward)

    @property
    def failed(self) -> bool:
        """Finished, verified and below a pass: what the analyst reads and branches start
        from. An attempt that ended `error` is never verified, so it is never `failed`."""
        return self.status != "running" and self.reward is not None and self.reward < PASS_REWARD


@dataclass(frozen=True)
class ModelCallRecord:
    """One model call, for token accounting by role."""

    role: Role
    task_id: str
    attempt_id: int | None
    turn_index: int | None
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None
    estimated: bool = False
    latency_s: float = 0.0
    method: str = ""
    """The schedule the call served (`pass@4`, `sprout`), so methods are charged apart."""


@dataclass(frozen=True)
class TokenTotals:
    """Tokens spent (every prompt and completion token) and with shared prefixes counted once."""

    spent: int = 0
    prefix_once: int = 0
    estimated: bool = False
    by_role: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "spent": self.spent,
            "prefix_once": self.prefix_once,
            "estimated": self.estimated,
            "by_role": dict(self.by_role),
        }


def count_tokens(
    calls: Sequence[ModelCallRecord],
    attempt_of: Callable[[int], Attempt],
    path_of: Callable[[Attempt], list[Turn]],
) -> TokenTotals:
    """Token totals over `calls`, by role, spent and with shared prefixes counted once.

    Prefix-once counting: an actor call is charged its completion plus the
    part of its prompt beyond the context the previous actor call on the
    same path already held (the shared prefix of a branch is charged once,
    to the attempt that produced it). The roots of one task and method share
    their first prompt (the system prompt and the task): it is charged once,
    to the first root. Analyst and reviewer calls share no prefix with the
    tree and are charged in full, their reasoning included. `attempt_of` and
    `path_of` are the tree's `attempt` and `path`.
    """
    paths: dict[int, list[Turn]] = {}

    def path(attempt_id: int) -> list[Turn]:
        if attempt_id not in paths:
            paths[attempt_id] = path_of(attempt_of(attempt_id))
        return paths[attempt_id]

    first_prompts: dict[tuple[str, str], tuple[int, int]] = {}
    spent = 0
    prefix_once = 0
    by_role: dict[str, int] = {}
    estimated = False
    for call in calls:
        total = call.prompt_tokens + call.completion_tokens
        spent += total
        by_role[call.role] = by_role.get(call.role, 0) + total
        estimated = estimated or call.estimated
        if call.role == "actor" and call.attempt_id is not None and call.turn_index:
            attempt = attempt_of(call.attempt_id)
            held = _context_held(attempt, call.turn_index, path)
            if attempt.parent_id is None and held == 0:  # a root's first call
                key = (attempt.task_id, attempt.method)
                owner, shared = first_prompts.setdefault(key, (attempt.id, call.prompt_tokens))
                if owner != attempt.id:
                    held = min(shared, call.prompt_tokens)
            prefix_once += call.completion_tokens + max(call.prompt_tokens - held, 0)
        else:
            prefix_once += total
    return TokenTotals(spent, prefix_once, estimated, by_role)


def _context_held(attempt: Attempt, turn_index: int, path: Callable[[int], list[Turn]]) -> int:
    """Tokens of this call's prompt that earlier calls in the tree already paid for.

    On the path: the whole context of the previous actor call. For a
    branch's first actor call, also the prompt of the parent's call right
    after the boundary, which held the same messages up to the boundary's
    observation.
    """
    own = path(attempt.id)
    held = _context_before(own, turn_index)
    first_own_actor = next(
        (t.index for t in own if t.attempt_id == attempt.id and t.author == "actor"), None
    )
    if attempt.parent_id is not None and first_own_actor == turn_index:
        after = [t for t in path(attempt.parent_id) if t.index == attempt.boundary + 1]
        if after and after[0].author == "actor":
            held = max(held, after[0].prompt_tokens)
    return held


def _context_before(path: list[Turn], turn_index: int) -> int:
    """Tokens of context that the last actor call before `turn_index` on `path` had seen."""
    for turn in reversed(path):
        if (
            turn.index < turn_index
            and turn.author == "actor"
            and (turn.prompt_tokens or turn.completion_tokens)
        ):
            return turn.prompt_tokens + turn.completion_tokens
    return 0


def shares_prefix(parent_ids: Sequence[int], child_ids: Sequence[int], length: int) -> bool:
    """Whether a branch's first `length` token ids are its parent's (the token-exact
    invariant): then that retained prefix was produced, counted and trained once, by the
    parent, and the learner forwards it once. At least one token, and not the whole child."""
    return 1 <= length < len(child_ids) and list(parent_ids[:length]) == list(child_ids[:length])
