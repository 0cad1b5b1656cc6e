"""The rollout tree: attempts, the turns they hold, and the two halves of every checkpoint.

A root attempt is a branch of checkpoint 0 with no starting turn; a branch
shares its parent's turns 1..boundary and owns the turns after. So the
state at any turn boundary, both the sandbox layer and the exact message
list, is derived from the stored turns; nothing is ever re-executed to get it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from sprout.store import Store

Message = dict[str, Any]
Author = Literal["actor", "reviewer"]
Role = Literal["actor", "analyst", "reviewer"]
AttemptStatus = Literal["running", "submitted", "limit", "error", "stopped"]
Fault = Literal["model", "sandbox", "harness"]
"""Why an attempt ended `error`: the model server failed (no reply after retries), the
sandbox failed, or sprout itself crashed. The first two are retried by `--resume`."""
"""`stopped`: its schedule needed no more turns (another attempt had passed)."""


class TreeError(ValueError):
    """A reference into the tree that does not exist (unknown attempt, boundary out of range)."""


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


class RolloutTree:
    """Read and grow the tree of one run; persistence is the store's business."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def root(
        self,
        task_id: str,
        prefix: list[Message],
        base_checkpoint: str,
        *,
        round: int = 0,
        method: str = "",
    ) -> Attempt:
        """A new root attempt of `task_id`, starting from `prefix` over `base_checkpoint`."""
        return self.store.add_attempt(
            Attempt(
                id=0,
                task_id=task_id,
                parent_id=None,
                boundary=0,
                kind="root",
                round=round,
                method=method,
                prefix=tuple(json.loads(json.dumps(prefix))),
                base_checkpoint=base_checkpoint,
            )
        )

    def branch(
        self,
        parent: Attempt | int,
        boundary: int,
        starting_turn: str | None = None,
        *,
        round: int = 0,
        method: str = "",
    ) -> Attempt:
        """A new attempt that resumes `parent` at turn boundary `boundary`.

        It shares the parent's turns 1..boundary (context and filesystem);
        `starting_turn`, when given, is played first as a reviewer-written
        turn. The actor runs it like any attempt.
        """
        parent = self.attempt(parent.id if isinstance(parent, Attempt) else parent)
        last = self.last_index(parent)
        if not isinstance(boundary, int) or isinstance(boundary, bool) or not 0 <= boundary <= last:
            raise TreeError(
                f"boundary {boundary!r} out of range for attempt {parent.id} (0..{last})"
            )
        return self.store.add_attempt(
            Attempt(
                id=0,
                task_id=parent.task_id,
                parent_id=parent.id,
                boundary=boundary,
                kind="branch",
                round=round,
                method=method,
                guided=starting_turn is not None,
                starting_turn=starting_turn,
            )
        )

    def attempt(self, attempt_id: int) -> Attempt:
        found = self.store.get_attempt(attempt_id)
        if found is None:
            raise TreeError(f"attempt {attempt_id!r}: no such attempt in {self.store.path}")
        return found

    def lineage(self, attempt: Attempt) -> str:
        """A name for `attempt` that does not depend on when it was made: `root2` is the
        second root of its task and method, `root2>3.1` the first branch of that root at
        boundary 3. Runs that make the same decisions name their attempts alike, so a
        resumed run, or the same run again, can draw the same samples (`sample_seed`)."""
        siblings = [a for a in self.store.attempts(attempt.task_id) if a.method == attempt.method]
        if attempt.parent_id is None:
            roots = [a.id for a in siblings if a.kind == "root"]
            return f"root{roots.index(attempt.id) + 1}"
        twins = [
            a.id
            for a in siblings
            if a.parent_id == attempt.parent_id and a.boundary == attempt.boundary
        ]
        parent = self.lineage(self.attempt(attempt.parent_id))
        return f"{parent}>{attempt.boundary}.{twins.index(attempt.id) + 1}"

    def sample_seed(self, attempt: Attempt, turn_index: int) -> int:
        """The seed of turn `turn_index` of `attempt`: its task, lineage and turn, hashed.
        Methods share it, so root k of each method draws alike (common random numbers)."""
        name = f"{attempt.task_id}|{self.lineage(attempt)}|{turn_index}"
        return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") >> 1

    def own_turns(self, attempt: Attempt) -> list[Turn]:
        """The turns this attempt executed itself (indexes boundary+1 onwards)."""
        return self.store.turns(attempt.id)

    def last_index(self, attempt: Attempt) -> int:
        """The attempt's last committed turn boundary."""
        turns = self.own_turns(attempt)
        return turns[-1].index if turns else attempt.boundary

    def path(self, attempt: Attempt, upto: int | None = None) -> list[Turn]:
        """Every turn in the attempt's context up to boundary `upto`, inherited ones included."""
        upto = self.last_index(attempt) if upto is None else upto
        if not 0 <= upto <= self.last_index(attempt):
            raise TreeError(
                f"boundary {upto} out of range for attempt {attempt.id} "
                f"(0..{self.last_index(attempt)})"
            )
        inherited: list[Turn] = []
        if attempt.parent_id is not None:
            inherited = self.path(self.attempt(attempt.parent_id), min(upto, attempt.boundary))
        return inherited + [t for t in self.own_turns(attempt) if t.index <= upto]

    def token_path(
        self, attempt: Attempt, upto: int | None = None
    ) -> list[tuple[tuple[int, ...], tuple[int, ...], Turn]]:
        """`(context_ids, completion_ids, turn)` for every turn of `path(attempt, upto)`.

        Concatenated, the ids are exactly the context a model held after turn
        `upto`'s reply: a branch's prefix is these stored ids, never a
        re-rendering of its messages.
        """
        found = []
        for turn in self.path(attempt, upto):
            if turn.context_ids is None or turn.completion_ids is None:
                raise TreeError(
                    f"attempt {attempt.id}: turn {turn.attempt_id}:{turn.index} ({turn.author}) "
                    "has no stored token ids; token-exact contexts need every turn on the "
                    "path played with a model that keeps them (hf/PATH)"
                )
            found.append((turn.context_ids, turn.completion_ids, turn))
        return found

    def root_of(self, attempt: Attempt) -> Attempt:
        while attempt.parent_id is not None:
            attempt = self.attempt(attempt.parent_id)
        return attempt

    def messages(self, attempt: Attempt, upto: int | None = None) -> list[Message]:
        """Exactly the messages the attempt's context held after observation `upto`."""
        messages = list(self.root_of(attempt).prefix)
        for turn in self.path(attempt, upto):
            messages.extend(turn.messages)
        return json.loads(json.dumps(messages))  # a private copy: callers append to it

    def checkpoint(self, attempt: Attempt, boundary: int | None = None) -> str:
        """The sandbox layer of checkpoint `ATTEMPT:boundary`."""
        turns = self.path(attempt, boundary)
        if turns:
            return turns[-1].checkpoint
        base = self.root_of(attempt).base_checkpoint
        assert base is not None, "a root always records checkpoint 0"
        return base

    def tokens(
        self,
        *,
        task_id: str | None = None,
        attempt_id: int | None = None,
        method: str | None = None,
    ) -> TokenTotals:
        """Token totals over model calls, by role, spent and with shared prefixes counted once.

        Prefix-once counting: an actor call is charged its completion plus the
        part of its prompt beyond the context the previous actor call on the
        same path already held (the shared prefix of a branch is charged once,
        to the attempt that produced it). The roots of one task and method share
        their first prompt (the system prompt and the task): it is charged once,
        to the first root. Analyst and reviewer calls share no prefix with the
        tree and are charged in full, their reasoning included.
        """
        calls = self.store.model_calls(task_id=task_id, attempt_id=attempt_id, method=method)
        paths: dict[int, list[Turn]] = {}
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
                held = self._context_held(call.attempt_id, call.turn_index, paths)
                attempt = self.attempt(call.attempt_id)
                if attempt.parent_id is None and held == 0:  # a root's first call
                    key = (attempt.task_id, attempt.method)
                    owner, shared = first_prompts.setdefault(key, (attempt.id, call.prompt_tokens))
                    if owner != attempt.id:
                        held = min(shared, call.prompt_tokens)
                prefix_once += call.completion_tokens + max(call.prompt_tokens - held, 0)
            else:
                prefix_once += total
        return TokenTotals(spent, prefix_once, estimated, by_role)

    def _context_held(self, attempt_id: int, turn_index: int, paths: dict[int, list[Turn]]) -> int:
        """Tokens of this call's prompt that earlier calls in the tree already paid for.

        On the path: the whole context of the previous actor call. For a
        branch's first actor call, also the prompt of the parent's call right
        after the boundary, which held the same messages up to the boundary's
        observation.
        """

        def path_of(known: int) -> list[Turn]:
            if known not in paths:
                paths[known] = self.path(self.attempt(known))
            return paths[known]

        path = path_of(attempt_id)
        held = _context_before(path, turn_index)
        attempt = self.attempt(attempt_id)
        first_own_actor = next(
            (t.index for t in path if t.attempt_id == attempt_id and t.author == "actor"), None
        )
        if attempt.parent_id is not None and first_own_actor == turn_index:
            after = [t for t in path_of(attempt.parent_id) if t.index == attempt.boundary + 1]
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
