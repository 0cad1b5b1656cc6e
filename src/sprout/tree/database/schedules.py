"""How far a run got: each schedule's status and wall time, and when attempts and turns
ended (what the viewer's timeline and token curves are ordered by)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sprout.tree.database.connection import Database


class ScheduleTables(Database):
    """The `schedules` table, and the times of `attempts` and `turns`."""

    # schedules: one method on one task, with its wall time across resumes

    def start_schedule(self, task_id: str, method: str) -> None:
        """Mark (task, method) running; a resumed one keeps the wall time it had spent."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO schedules (task_id, method, status, wall_s, started) "
                "VALUES (?, ?, 'running', 0, ?) ON CONFLICT (task_id, method) "
                "DO UPDATE SET status = 'running', error = NULL, started = excluded.started",
                (task_id, method, time.time()),
            )

    def pause_schedule(self, task_id: str, method: str) -> None:
        """Leave (task, method) unfinished (a halt): add this leg's wall time, so that a
        resumed pair's wall is the sum of its legs."""
        now = time.time()
        with self.transaction() as db:
            db.execute(
                "UPDATE schedules SET wall_s = wall_s + (? - started), started = ? "
                "WHERE task_id = ? AND method = ? AND status = 'running'",
                (now, now, task_id, method),
            )

    def finish_schedule(
        self, task_id: str, method: str, *, resolved: bool | None, error: str | None
    ) -> None:
        """Close (task, method) as `resolved` or with its error; adds this leg's wall time."""
        now = time.time()
        with self.transaction() as db:
            db.execute(
                "UPDATE schedules SET status = ?, resolved = ?, error = ?, finished = ?, "
                "wall_s = wall_s + (? - started) WHERE task_id = ? AND method = ?",
                (
                    "error" if error else "done",
                    None if resolved is None else int(resolved),
                    error,
                    now,
                    now,
                    task_id,
                    method,
                ),
            )

    def schedules(self) -> list[dict[str, Any]]:
        """Every (task, method) of the run with its status, outcome and wall time."""
        with self._lock:
            rows = self._db.execute(
                "SELECT task_id, method, status, resolved, error, wall_s FROM schedules "
                "ORDER BY rowid"
            ).fetchall()
        return [
            {
                "task_id": row["task_id"],
                "method": row["method"],
                "status": row["status"],
                "resolved": None if row["resolved"] is None else bool(row["resolved"]),
                "error": row["error"],
                "wall_s": row["wall_s"],
            }
            for row in rows
        ]

    # when things happened: what the viewer's timeline and token curves are ordered by

    def schedule_finish_times(self) -> dict[tuple[str, str], float | None]:
        """When each (task, method) finished (None while it runs)."""
        with self._lock:
            rows = self._db.execute("SELECT task_id, method, finished FROM schedules").fetchall()
        return {(row["task_id"], row["method"]): row["finished"] for row in rows}

    def attempt_finish_times(self, attempt_ids: Sequence[int]) -> dict[int, float | None]:
        """When each of `attempt_ids` ended (None while it runs)."""
        marks = ",".join("?" * len(attempt_ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT id, finished FROM attempts WHERE id IN ({marks})", list(attempt_ids)
            ).fetchall()
        return {row["id"]: row["finished"] for row in rows}

    def turn_times(self, attempt_ids: Sequence[int]) -> dict[tuple[int, int], float]:
        """When each turn of `attempt_ids` was committed, by (attempt id, index)."""
        marks = ",".join("?" * len(attempt_ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT attempt_id, idx, created FROM turns WHERE attempt_id IN ({marks})",
                list(attempt_ids),
            ).fetchall()
        return {(row["attempt_id"], row["idx"]): row["created"] for row in rows}
