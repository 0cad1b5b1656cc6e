"""The records of the rollout tree: attempts, turns, their calls and the model calls.

Plain frozen data, shared by the tree (which reads and grows them) and the store
(which persists them); neither module owns the other's half. `sprout.tree`
re-exports them, so callers import them from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from sprout.workspace import Change

Message = dict[str, Any]
Author = Literal["actor", "reviewer"]
Role = Literal["actor", "analyst", "reviewer"]
AttemptStatus = Literal["running", "submitted", "limit", "error", "stopped"]
"""`stopped`: its schedule needed no more turns (another attempt had passed)."""
Fault = Literal["model", "sandbox", "harness"]
"""Why an attempt ended `error`: the model server failed (no reply after retries), the
sandbox failed, or sprout itself crashed. The first two are retried by `--resume`."""


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
    round: int = 0
    method: str = ""
    guided: bool = False
    """True when a reviewer wrote the starting turn."""
    starting_turn: str | None = None
    prefix: tuple[Message, ...] = ()
    """Roots only: the messages before the first turn (system prompt, task)."""
    base_checkpoint: str | None = None
    """Roots only: the task's untouched sandbox (checkpoint 0)."""
    reward: float | None = None
    diagnostics: dict[str, Any] | None = None
    patch: str | None = None
    created: float = 0.0


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
