"""What the models were asked and answered: every model call's tokens and latency, and the
roles' outputs (analyses and reviews) as the plain JSON bodies `sprout.roles` shapes."""

from __future__ import annotations

import json
import time
from typing import Any

from sprout.tree.database.connection import Database
from sprout.tree.database.rows import model_call_from_row
from sprout.tree.records import ModelCallRecord


class CallTables(Database):
    """The `model_calls`, `analyses` and `reviews` tables."""

    # model calls

    def record_call(self, call: ModelCallRecord) -> None:
        """Record one model call (any role), for token accounting."""
        with self.transaction() as db:
            db.execute(
                """INSERT INTO model_calls (task_id, attempt_id, role, turn_idx, prompt_tokens,
                   completion_tokens, cached_tokens, estimated, latency_s, method, created)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    call.task_id,
                    call.attempt_id,
                    call.role,
                    call.turn_index,
                    call.prompt_tokens,
                    call.completion_tokens,
                    call.cached_tokens,
                    int(call.estimated),
                    call.latency_s,
                    call.method,
                    time.time(),
                ),
            )

    def model_calls(
        self,
        *,
        task_id: str | None = None,
        attempt_id: int | None = None,
        method: str | None = None,
    ) -> list[ModelCallRecord]:
        query = (
            "SELECT * FROM model_calls WHERE (? IS NULL OR task_id = ?) "
            "AND (? IS NULL OR attempt_id = ?) AND (? IS NULL OR method = ?) ORDER BY id"
        )
        with self._lock:
            rows = self._db.execute(
                query, (task_id, task_id, attempt_id, attempt_id, method, method)
            ).fetchall()
        return [model_call_from_row(row) for row in rows]

    # role outputs: plain JSON bodies, shaped and validated by sprout.roles

    def add_analysis(self, task_id: str, attempt_id: int, body: dict[str, Any]) -> None:
        """Record the analysis of a failed attempt (one per attempt; a rerun replaces it)."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO analyses (attempt_id, task_id, body, created) "
                "VALUES (?, ?, ?, ?)",
                (attempt_id, task_id, json.dumps(body), time.time()),
            )

    def analyses(self, task_id: str) -> dict[int, dict[str, Any]]:
        """Every stored analysis of `task_id`'s attempts, by attempt id."""
        with self._lock:
            rows = self._db.execute(
                "SELECT attempt_id, body FROM analyses WHERE task_id = ? ORDER BY attempt_id",
                (task_id,),
            ).fetchall()
        return {row["attempt_id"]: json.loads(row["body"]) for row in rows}

    def add_review(self, task_id: str, method: str, round: int, body: dict[str, Any]) -> None:
        """Record the reviewer's plan for one round of one schedule (one per round)."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO reviews (task_id, method, round, body, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (task_id, method, round, json.dumps(body), time.time()),
            )

    def reviews(self, task_id: str, method: str | None = None) -> dict[tuple[str, int], Any]:
        """Stored reviews of `task_id`, by (method, round)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT method, round, body FROM reviews WHERE task_id = ? "
                "AND (? IS NULL OR method = ?) ORDER BY method, round",
                (task_id, method, method),
            ).fetchall()
        return {(row["method"], row["round"]): json.loads(row["body"]) for row in rows}
