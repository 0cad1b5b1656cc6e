"""The rollout tree: attempts, the turns they hold, and the two halves of every checkpoint.

A root attempt is a branch of checkpoint 0 with no starting turn; a branch
shares its parent's turns 1..boundary and owns the turns after. So the
state at any turn boundary, both the sandbox layer and the exact message
list, is derived from the stored turns; nothing is ever re-executed to get it.

The tree is the only writer of a run: the actor commits turns and model calls
through its verbs, the schedules attempts, outcomes and their own bookkeeping,
the roles analyses and reviews. It is built on the tables of its SQLite database
(`sprout.tree.database`, private to this package): their reads and writes are the tree's
own verbs, and the verbs that need more than one statement (a branch's boundary, a turn's
settled checkpoint, a path through the ancestors) are written here.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sprout.errors import SproutError
from sprout.tree.database import RunTables
from sprout.tree.database.errors import explain
from sprout.tree.records import (
    Attempt,
    Message,
    TokenTotals,
    Turn,
    boundary_problem,
    count_tokens,
)
from sprout.workspace import Change, ChangeReader, Settle


class TreeError(SproutError, ValueError):
    """A reference into the tree that does not exist (unknown attempt, boundary out of range)
    or cannot be read (an `ATTEMPT:k` that is not one)."""


@dataclass(frozen=True)
class CheckpointRef:
    """`ATTEMPT:k`, how a person names a checkpoint: attempt `attempt` after its turn
    `boundary`, or after its last turn when `boundary` is None (`ATTEMPT` alone)."""

    attempt: int
    boundary: int | None = None

    @classmethod
    def parse(cls, text: str) -> CheckpointRef:
        """`text` as a reference; a TreeError naming `text` when it is not `ATTEMPT[:k]`."""
        attempt, _, boundary = text.partition(":")
        try:
            return cls(int(attempt), int(boundary) if boundary else None)
        except ValueError:
            example = "e.g. 3:2 for attempt 3 after turn 2"
            raise TreeError(f"{text!r}: expected ATTEMPT:k, {example}") from None

    def __str__(self) -> str:
        return str(self.attempt) if self.boundary is None else f"{self.attempt}:{self.boundary}"


class RolloutTree(RunTables):
    """Read and grow the tree of one run, and keep its records, in the run's SQLite file
    (`path`), which the tree alone reads and writes.

    `readonly` opens an existing file without writing anything (no migration): what GC
    reads a run's checkpoints with. `read_changes`, given by whoever holds the run's
    layers, answers for turns stored before sprout recorded what each turn changed (see
    `changes`).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        readonly: bool = False,
        read_changes: ChangeReader | None = None,
    ) -> None:
        super().__init__(path, readonly=readonly)
        self.read_changes = read_changes
        """What a turn stored without its changes changed (see `changes`); None: unknown."""
        self.settle: Settle = lambda checkpoint: None
        """Waited for before a checkpoint is recorded (`Settle`); by default, nothing is."""

    # growing the tree

    def root(
        self,
        task_id: str,
        prefix: list[Message],
        base_checkpoint: str,
        *,
        round: int = 0,
        method: str = "",
        restarts: int | None = None,
    ) -> Attempt:
        """A new root attempt of `task_id`, starting from `prefix` over `base_checkpoint`
        (in place of the lost root `restarts`, when given)."""
        self.settle(base_checkpoint)
        return self._add_attempt(
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
                restarts=restarts,
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
        if problem := boundary_problem(parent.id, boundary, self.last_index(parent)):
            raise TreeError(problem)
        return self._add_attempt(
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

    def commit_turn(self, turn: Turn) -> None:
        """Commit a finished turn, once settled: from now on it is never redone."""
        self.settle(turn.checkpoint)
        self._add_turn(turn)

    # reading the tree, beyond what its tables answer

    def attempt(self, attempt_id: int) -> Attempt:
        found = self.find_attempt(attempt_id)
        if found is None:
            raise TreeError(f"attempt {attempt_id!r}: no such attempt in {self.database}")
        return found

    def lineage(self, attempt: Attempt) -> str:
        """A name for `attempt` that does not depend on when it was made: `root2` is the
        second root of its task and method, `root2>3.1` the first branch of that root at
        boundary 3. Runs that make the same decisions name their attempts alike, so a
        resumed run, or the same run again, can draw the same samples (`sample_seed`)."""
        siblings = [a for a in self.attempts(attempt.task_id) if a.method == attempt.method]
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

    def last_index(self, attempt: Attempt) -> int:
        """The attempt's last committed turn boundary (read without loading its turns: a
        300-turn attempt asks this often)."""
        last = self._last_turn_index(attempt.id)
        return attempt.boundary if last is None else last

    def path(self, attempt: Attempt, upto: int | None = None) -> list[Turn]:
        """Every turn in the attempt's context up to boundary `upto`, inherited ones included."""
        own = self.own_turns(attempt)
        last = own[-1].index if own else attempt.boundary
        upto = last if upto is None else upto
        if problem := boundary_problem(attempt.id, upto, last):
            raise TreeError(problem)
        inherited: list[Turn] = []
        if attempt.parent_id is not None:
            inherited = self.path(self.attempt(attempt.parent_id), min(upto, attempt.boundary))
        return inherited + [t for t in own if t.index <= upto]

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
        copied: list[Message] = json.loads(json.dumps(messages))  # callers append to it
        return copied

    def checkpoint(self, attempt: Attempt, boundary: int | None = None) -> str:
        """The sandbox layer of checkpoint `ATTEMPT:boundary`."""
        turns = self.path(attempt, boundary)
        if turns:
            return turns[-1].checkpoint
        found = self.root_of(attempt).base_checkpoint
        assert found is not None, "a root always records checkpoint 0"
        return found

    def changes(self, attempt: Attempt) -> dict[int, tuple[Change, ...] | None]:
        """What each turn on `attempt`'s path changed, by turn index: as recorded when the
        turn was sealed; for a turn stored before sprout recorded that, what `read_changes`
        reads from the layers; None when neither can say (freed layers, no reader)."""
        previous = self.root_of(attempt).base_checkpoint
        found: dict[int, tuple[Change, ...] | None] = {}
        for turn in self.path(attempt):
            changes = turn.changes
            if changes is None and previous is not None and self.read_changes is not None:
                read = self.read_changes(previous, turn.checkpoint)
                changes = None if read is None else tuple(read)
            found[turn.index] = changes
            previous = turn.checkpoint
        return found

    def tokens(
        self,
        *,
        task_id: str | None = None,
        attempt_id: int | None = None,
        method: str | None = None,
    ) -> TokenTotals:
        """Token totals over model calls, by role, spent and with shared prefixes counted once.

        The prefix-once rule is `sprout.tree.records.count_tokens`'s.
        """
        calls = self.model_calls(task_id=task_id, attempt_id=attempt_id, method=method)
        return count_tokens(calls, self.attempt, self.path)


def referenced_checkpoints(path: str | Path) -> set[str]:
    """The checkpoints the run in database `path` references (`RolloutTree.checkpoints`),
    read without writing the file; RunDatabaseError when it cannot be read."""
    tree = RolloutTree(path, readonly=True)
    try:
        return tree.checkpoints() if tree.version else set()
    except sqlite3.Error as error:
        raise explain(tree.database, error) from None
    finally:
        tree.close()
