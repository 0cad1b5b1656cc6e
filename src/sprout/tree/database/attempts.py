"""The tasks of a run, its attempts and their turns, and the checkpoints those reference.

Every turn is committed in one transaction when it ends, so a run killed at any moment
loses at most the turn in flight.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

from sprout.tree.database.connection import Database
from sprout.tree.database.rows import attempt_from_row, json_changes, json_list, turn_from_row
from sprout.tree.records import Attempt, AttemptStatus, Fault, Turn


class AttemptTables(Database):
    """The `tasks`, `attempts` and `turns` tables."""

    # tasks

    def add_task(self, task_id: str, spec: dict[str, Any]) -> None:
        """Record a task once; a rerun with the same id keeps the first record."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO tasks (id, spec, created) VALUES (?, ?, ?)",
                (task_id, json.dumps(spec), time.time()),
            )

    def task_spec(self, task_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT spec FROM tasks WHERE id = ?", (task_id,)).fetchone()
        return None if row is None else json.loads(row["spec"])

    def task_ids(self) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT id FROM tasks ORDER BY rowid").fetchall()
        return [row["id"] for row in rows]

    # attempts

    def _add_attempt(self, attempt: Attempt) -> Attempt:
        """Insert `attempt` (its id is assigned here) and return it with that id."""
        created = time.time()
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO attempts (task_id, parent_id, boundary, kind, round, method,
                   guided, starting_turn, prefix, base_checkpoint, restarts, status, created)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)""",
                (
                    attempt.task_id,
                    attempt.parent_id,
                    attempt.boundary,
                    attempt.kind,
                    attempt.round,
                    attempt.method,
                    int(attempt.guided),
                    attempt.starting_turn,
                    json.dumps(list(attempt.prefix)),
                    attempt.base_checkpoint,
                    attempt.restarts,
                    created,
                ),
            )
        assert cursor.lastrowid is not None
        return dataclasses.replace(attempt, id=cursor.lastrowid, created=created)

    def finish_attempt(
        self, attempt_id: int, status: AttemptStatus, reason: str, *, fault: Fault | None = None
    ) -> None:
        """End an attempt with `status` and its reason (and, for `error`, its fault)."""
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET status = ?, end_reason = ?, fault = ?, finished = ? "
                "WHERE id = ?",
                (status, reason, fault, time.time(), attempt_id),
            )

    def reopen_attempt(self, attempt_id: int) -> None:
        """Put back to `running` one attempt that ended `error`, once what failed is made
        good (its lost checkpoint rebuilt), so that it continues from its last turn."""
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET status = 'running', end_reason = NULL, fault = NULL, "
                "finished = NULL WHERE id = ? AND status = 'error'",
                (attempt_id,),
            )

    def reopen_attempts(self, task_id: str, method: str, faults: Sequence[Fault]) -> int:
        """Put back to `running` the attempts of (task, method) that a fault of one of
        `faults` ended, so that a resumed run continues them, and those a verifier's fault
        ended (when `faults` names it) back to how their turns ended, so that it verifies
        them again; returns how many."""
        marks = ", ".join("?" for _ in faults)
        with self.transaction() as db:
            continued = db.execute(
                "UPDATE attempts SET status = 'running', end_reason = NULL, fault = NULL, "
                f"finished = NULL WHERE task_id = ? AND method = ? AND status = 'error' "
                f"AND fault IN ({marks}) AND fault != 'verifier'",
                (task_id, method, *faults),
            ).rowcount
            if "verifier" not in faults:
                return continued
            verified = db.execute(
                "UPDATE attempts SET status = json_extract(played, '$.status'), "
                "end_reason = json_extract(played, '$.reason'), fault = NULL, played = NULL "
                "WHERE task_id = ? AND method = ? AND status = 'error' AND fault = 'verifier' "
                "AND played IS NOT NULL",
                (task_id, method),
            ).rowcount
        return continued + verified

    def verifier_failed(self, attempt_id: int, reason: str) -> None:
        """End an attempt whose verifier gave no verdict `error` (fault `verifier`), keeping
        how its turns ended for a verification again."""
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET played = json_object('status', status, 'reason', "
                "end_reason), status = 'error', end_reason = ?, fault = 'verifier', "
                "reward = NULL, finished = ? WHERE id = ? AND status != 'error'",
                (reason, time.time(), attempt_id),
            )

    def set_outcome(
        self, attempt_id: int, reward: float, diagnostics: dict[str, Any], patch: str | None
    ) -> None:
        """Record the verifier's reward, diagnostics and patch for an attempt."""
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET reward = ?, diagnostics = ?, patch = ? WHERE id = ?",
                (reward, json.dumps(diagnostics), patch, attempt_id),
            )

    def find_attempt(self, attempt_id: int) -> Attempt | None:
        """Attempt `attempt_id`, or None when the run has none."""
        with self._lock:
            row = self._db.execute("SELECT * FROM attempts WHERE id = ?", (attempt_id,)).fetchone()
        return None if row is None else attempt_from_row(row)

    def attempts(self, task_id: str | None = None, status: str | None = None) -> list[Attempt]:
        """The attempts (of `task_id`, with `status`), oldest first."""
        query = (
            "SELECT * FROM attempts WHERE (? IS NULL OR task_id = ?) AND (? IS NULL OR status = ?)"
        )
        with self._lock:
            rows = self._db.execute(
                query + " ORDER BY id", (task_id, task_id, status, status)
            ).fetchall()
        return [attempt_from_row(row) for row in rows]

    # turns

    def _add_turn(self, turn: Turn) -> None:
        """Insert a finished turn: from now on it is never redone."""
        calls = [dataclasses.asdict(call) for call in turn.calls]
        with self.transaction() as db:
            db.execute(
                """INSERT INTO turns (attempt_id, idx, author, text, calls, messages, checkpoint,
                   prompt_tokens, completion_tokens, cached_tokens, estimated, entropy,
                   duration_s, format_error, created, context_ids, completion_ids,
                   completion_logprobs, changes)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    turn.attempt_id,
                    turn.index,
                    turn.author,
                    turn.text,
                    json.dumps(calls),
                    json.dumps(list(turn.messages)),
                    turn.checkpoint,
                    turn.prompt_tokens,
                    turn.completion_tokens,
                    turn.cached_tokens,
                    int(turn.estimated),
                    turn.entropy,
                    turn.duration_s,
                    int(turn.format_error),
                    time.time(),
                    json_list(turn.context_ids),
                    json_list(turn.completion_ids),
                    json_list(turn.completion_logprobs),
                    json_changes(turn.changes),
                ),
            )

    def own_turns(self, attempt: Attempt) -> list[Turn]:
        """The turns this attempt executed itself (indexes boundary+1 onwards)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM turns WHERE attempt_id = ? ORDER BY idx", (attempt.id,)
            ).fetchall()
        return [turn_from_row(row) for row in rows]

    def _last_turn_index(self, attempt_id: int) -> int | None:
        """The index of the attempt's last own turn; None when it has none."""
        with self._lock:
            row = self._db.execute(
                "SELECT MAX(idx) FROM turns WHERE attempt_id = ?", (attempt_id,)
            ).fetchone()
        return None if row[0] is None else int(row[0])

    def checkpoints(self) -> set[str]:
        """Every sandbox layer the tree references: what layer GC must keep."""
        with self._lock:
            turns = self._db.execute("SELECT DISTINCT checkpoint FROM turns").fetchall()
            roots = self._db.execute(
                "SELECT DISTINCT base_checkpoint FROM attempts WHERE base_checkpoint IS NOT NULL"
            ).fetchall()
        return {row[0] for row in (*turns, *roots)}
