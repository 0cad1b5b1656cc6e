"""SQLite persistence of a run: one file (WAL), a schema version, and migrations.

The only module that writes SQL. Every turn is committed in one transaction
when it ends, so a run killed at any moment loses at most the turn in flight.
Everything is stored as plain data (JSON columns), never pickles, so a store
written by one version is read by the next.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sprout.durable import describe_processes, lock_holders
from sprout.records import Attempt, CallRecord, ModelCallRecord, Turn
from sprout.workspace import Change

MIGRATIONS: list[str] = [
    """
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        spec TEXT NOT NULL,
        created REAL NOT NULL
    );
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL REFERENCES tasks(id),
        parent_id INTEGER REFERENCES attempts(id),
        boundary INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('root', 'branch')),
        round INTEGER NOT NULL,
        method TEXT NOT NULL,
        guided INTEGER NOT NULL,
        starting_turn TEXT,
        prefix TEXT NOT NULL,
        base_checkpoint TEXT,
        status TEXT NOT NULL,
        end_reason TEXT,
        reward REAL,
        diagnostics TEXT,
        patch TEXT,
        created REAL NOT NULL,
        finished REAL
    );
    CREATE TABLE turns (
        attempt_id INTEGER NOT NULL REFERENCES attempts(id),
        idx INTEGER NOT NULL,
        author TEXT NOT NULL CHECK (author IN ('actor', 'reviewer')),
        text TEXT NOT NULL,
        calls TEXT NOT NULL,
        messages TEXT NOT NULL,
        checkpoint TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        cached_tokens INTEGER,
        estimated INTEGER NOT NULL,
        entropy REAL,
        duration_s REAL NOT NULL,
        format_error INTEGER NOT NULL,
        created REAL NOT NULL,
        PRIMARY KEY (attempt_id, idx)
    );
    CREATE TABLE model_calls (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        attempt_id INTEGER REFERENCES attempts(id),
        role TEXT NOT NULL CHECK (role IN ('actor', 'analyst', 'reviewer')),
        turn_idx INTEGER,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        cached_tokens INTEGER,
        estimated INTEGER NOT NULL,
        latency_s REAL NOT NULL,
        created REAL NOT NULL
    );
    CREATE INDEX attempts_by_task ON attempts(task_id);
    CREATE INDEX calls_by_task ON model_calls(task_id);
    """,
    """
    ALTER TABLE model_calls ADD COLUMN method TEXT NOT NULL DEFAULT '';
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE analyses (
        attempt_id INTEGER PRIMARY KEY REFERENCES attempts(id),
        task_id TEXT NOT NULL,
        body TEXT NOT NULL,
        created REAL NOT NULL
    );
    CREATE TABLE reviews (
        task_id TEXT NOT NULL,
        method TEXT NOT NULL,
        round INTEGER NOT NULL,
        body TEXT NOT NULL,
        created REAL NOT NULL,
        PRIMARY KEY (task_id, method, round)
    );
    CREATE TABLE schedules (
        task_id TEXT NOT NULL,
        method TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'done', 'error')),
        resolved INTEGER,
        error TEXT,
        wall_s REAL NOT NULL,
        started REAL NOT NULL,
        finished REAL,
        PRIMARY KEY (task_id, method)
    );
    """,
    """
    ALTER TABLE turns ADD COLUMN context_ids TEXT;
    ALTER TABLE turns ADD COLUMN completion_ids TEXT;
    ALTER TABLE turns ADD COLUMN completion_logprobs TEXT;
    """,
    """
    ALTER TABLE attempts ADD COLUMN fault TEXT;
    """,
    """
    ALTER TABLE turns ADD COLUMN changes TEXT;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(Exception):
    """The database file cannot be used (newer schema, not a sprout store, a folder, read-only,
    locked by another process); the message names the file and what would fix it."""


WAL_WRITE_LOCK = 120
"""The byte of the -shm file that SQLite's WAL writer locks: whoever holds it is writing."""


class Store:
    """One run's rollout tree in SQLite, safe to share between threads.

    `readonly` opens an existing store without writing anything (no migration): what GC
    reads a run's checkpoints with.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self.version = 0
        """The schema version of the file (SCHEMA_VERSION once migrated)."""
        if self.path.is_dir():
            raise StoreError(
                f"{self.path}: a folder, not a SQLite file; move it away (or choose another "
                "run folder)"
            )
        if readonly and not self.path.is_file():
            raise StoreError(f"{self.path}: no such file")
        try:
            if readonly:
                uri = f"{self.path.resolve().as_uri()}?mode=ro"
                self._db = sqlite3.connect(
                    uri, uri=True, check_same_thread=False, isolation_level=None
                )
            else:
                self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as error:
            raise self._error(error) from None
        self._db.row_factory = sqlite3.Row
        try:
            if readonly:
                self._check_version()
            else:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA foreign_keys=ON")
                self._migrate()
        except sqlite3.Error as error:
            self._db.close()
            raise self._error(error) from None
        except StoreError:
            self._db.close()
            raise

    def _error(self, error: sqlite3.Error) -> StoreError:
        """`error` as one line that names the file and says what to do."""
        name = getattr(error, "sqlite_errorname", "")
        path = self.path
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return StoreError(f"{path}: {self.locked_by()}")
        if name.startswith("SQLITE_READONLY") or (
            name.startswith("SQLITE_CANTOPEN")
            and path.parent.is_dir()
            and not os.access(path.parent, os.W_OK)
        ):
            where = path if path.exists() and not os.access(path, os.W_OK) else path.parent
            return StoreError(
                f"{path}: read-only ({where} cannot be written) and sprout needs to write it "
                "(every turn, and SQLite's journal beside it); make it writable, or copy the "
                "run folder somewhere writable"
            )
        if name.startswith("SQLITE_CANTOPEN"):
            return StoreError(f"{path}: cannot be opened ({error})")
        if name.startswith("SQLITE_FULL"):
            return StoreError(f"{path}: the disk is full; free space, then --resume")
        if name.startswith("SQLITE_IOERR"):
            return StoreError(f"{path}: the disk failed to read or write it ({error})")
        if name.startswith("SQLITE_NOTADB"):
            return StoreError(
                f"{path}: not a sprout store ({error}); move it away or choose another run folder"
            )
        return StoreError(f"{path}: not a sprout store ({error})")

    def locked_by(self) -> str:
        """Why a write waited in vain: the process writing the file, named where /proc says."""
        writers = lock_holders(f"{self.path}-shm", kind="POSIX", write_at=WAL_WRITE_LOCK)
        writers = [pid for pid in writers if pid != os.getpid()]
        return (
            f"locked: {describe_processes(writers)} is writing it (another sprout using this "
            "run folder?); wait for it to end or stop it, then run again (nothing saved is lost)"
        )

    def check_writable(self) -> None:
        """Raise StoreError now, rather than at the first turn, when this process cannot
        write the store: read-only, or locked by another writer (after SQLite's 5 s wait)."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    version = self._db.execute("PRAGMA user_version").fetchone()[0]
                    self._db.execute(f"PRAGMA user_version={int(version)}")  # a write, undone
                finally:
                    self._db.execute("ROLLBACK")
            except sqlite3.OperationalError as error:
                raise self._error(error) from None

    def holds_run(self) -> bool:
        """Whether anything of a run was saved here (settings, a task, an attempt)."""
        with self._lock:
            for table in ("meta", "tasks", "attempts"):
                if self._db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
                    return True
        return False

    def _check_version(self) -> None:
        self.version = version = self._db.execute("PRAGMA user_version").fetchone()[0]
        tables = self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if version == 0 and tables:
            raise StoreError(f"{self.path}: not a sprout store (it holds other tables)")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {version} is newer than this sprout "
                f"({SCHEMA_VERSION}); upgrade sprout-rl to read it"
            )

    def _migrate(self) -> None:
        with self._lock:
            self._check_version()
            for number in range(self.version, SCHEMA_VERSION):
                with self.transaction():
                    for statement in MIGRATIONS[number].split(";"):
                        if statement.strip():
                            self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version={number + 1}")
                self.version = number + 1

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write, committed whole or not at all; a store that cannot be written (locked
        by another process, read-only, a full disk) raises StoreError naming the file, and
        what was committed before stays."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                raise self._error(error) from None
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as error:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(error, sqlite3.OperationalError) and _unwritable(error):
                    raise self._error(error) from None
                raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

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

    # attempts

    def add_attempt(self, attempt: Attempt) -> Attempt:
        """Insert `attempt` (its id is assigned here) and return it with that id."""
        created = time.time()
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO attempts (task_id, parent_id, boundary, kind, round, method,
                   guided, starting_turn, prefix, base_checkpoint, status, created)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)""",
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
                    created,
                ),
            )
        assert cursor.lastrowid is not None
        return dataclasses.replace(attempt, id=cursor.lastrowid, created=created)

    def finish_attempt(
        self, attempt_id: int, status: str, reason: str | None, *, fault: str | None = None
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET status = ?, end_reason = ?, fault = ?, finished = ? "
                "WHERE id = ?",
                (status, reason, fault, time.time(), attempt_id),
            )

    def reopen_attempts(self, task_id: str, method: str, faults: Sequence[str]) -> int:
        """Put back to `running` the attempts of (task, method) that a fault of one of
        `faults` ended, so that a resumed run continues them; returns how many."""
        marks = ", ".join("?" for _ in faults)
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE attempts SET status = 'running', end_reason = NULL, fault = NULL, "
                f"finished = NULL WHERE task_id = ? AND method = ? AND status = 'error' "
                f"AND fault IN ({marks})",
                (task_id, method, *faults),
            )
        return cursor.rowcount

    def set_outcome(
        self, attempt_id: int, reward: float, diagnostics: dict[str, Any], patch: str | None
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET reward = ?, diagnostics = ?, patch = ? WHERE id = ?",
                (reward, json.dumps(diagnostics), patch, attempt_id),
            )

    def get_attempt(self, attempt_id: int) -> Attempt | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM attempts WHERE id = ?", (attempt_id,)).fetchone()
        return None if row is None else _attempt(row)

    def attempts(self, task_id: str | None = None, status: str | None = None) -> list[Attempt]:
        query = (
            "SELECT * FROM attempts WHERE (? IS NULL OR task_id = ?) AND (? IS NULL OR status = ?)"
        )
        with self._lock:
            rows = self._db.execute(
                query + " ORDER BY id", (task_id, task_id, status, status)
            ).fetchall()
        return [_attempt(row) for row in rows]

    # turns

    def add_turn(self, turn: Turn) -> None:
        """Commit a finished turn: from now on it is never redone."""
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
                    _json_list(turn.context_ids),
                    _json_list(turn.completion_ids),
                    _json_list(turn.completion_logprobs),
                    _json_changes(turn.changes),
                ),
            )

    def turns(self, attempt_id: int) -> list[Turn]:
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM turns WHERE attempt_id = ? ORDER BY idx", (attempt_id,)
            ).fetchall()
        return [_turn(row) for row in rows]

    def checkpoints(self) -> set[str]:
        """Every sandbox layer the tree references: what layer GC must keep."""
        with self._lock:
            turns = self._db.execute("SELECT DISTINCT checkpoint FROM turns").fetchall()
            roots = self._db.execute(
                "SELECT DISTINCT base_checkpoint FROM attempts WHERE base_checkpoint IS NOT NULL"
            ).fetchall()
        return {row[0] for row in (*turns, *roots)}

    # model calls

    def add_model_call(self, call: ModelCallRecord) -> None:
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
        return [
            ModelCallRecord(
                role=row["role"],
                task_id=row["task_id"],
                attempt_id=row["attempt_id"],
                turn_index=row["turn_idx"],
                prompt_tokens=row["prompt_tokens"],
                completion_tokens=row["completion_tokens"],
                cached_tokens=row["cached_tokens"],
                estimated=bool(row["estimated"]),
                latency_s=row["latency_s"],
                method=row["method"],
            )
            for row in rows
        ]

    # run settings, kept so that --resume continues the same run

    def get_meta(self, key: str) -> Any:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row["value"])

    def set_meta(self, key: str, value: Any) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value))
            )

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

    def attempt_finish_times(self, ids: Sequence[int]) -> dict[int, float | None]:
        """When each of the attempts `ids` ended (None while it runs)."""
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT id, finished FROM attempts WHERE id IN ({marks})", list(ids)
            ).fetchall()
        return {row["id"]: row["finished"] for row in rows}

    def turn_times(self, ids: Sequence[int]) -> dict[tuple[int, int], float]:
        """When each turn of the attempts `ids` was committed, by (attempt id, index)."""
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT attempt_id, idx, created FROM turns WHERE attempt_id IN ({marks})",
                list(ids),
            ).fetchall()
        return {(row["attempt_id"], row["idx"]): row["created"] for row in rows}

    def task_ids(self) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT id FROM tasks ORDER BY rowid").fetchall()
        return [row["id"] for row in rows]


def referenced_checkpoints(path: str | Path) -> set[str]:
    """The checkpoints the run in database `path` references (`Store.checkpoints`), read
    without writing the file; StoreError when it cannot be read."""
    store = Store(path, readonly=True)
    try:
        return store.checkpoints() if store.version else set()
    except sqlite3.Error as error:
        raise store._error(error) from None
    finally:
        store.close()


def _unwritable(error: sqlite3.OperationalError) -> bool:
    """The file, not the statement, is at fault: say so in one line rather than a traceback."""
    name = getattr(error, "sqlite_errorname", "")
    return name.startswith(
        ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_READONLY", "SQLITE_FULL", "SQLITE_IOERR")
    )


def _attempt(row: sqlite3.Row) -> Attempt:
    return Attempt(
        id=row["id"],
        task_id=row["task_id"],
        parent_id=row["parent_id"],
        boundary=row["boundary"],
        kind=row["kind"],
        status=row["status"],
        end_reason=row["end_reason"],
        fault=row["fault"],
        round=row["round"],
        method=row["method"],
        guided=bool(row["guided"]),
        starting_turn=row["starting_turn"],
        prefix=tuple(json.loads(row["prefix"])),
        base_checkpoint=row["base_checkpoint"],
        reward=row["reward"],
        diagnostics=json.loads(row["diagnostics"]) if row["diagnostics"] else None,
        patch=row["patch"],
        created=row["created"],
    )


def _turn(row: sqlite3.Row) -> Turn:
    return Turn(
        attempt_id=row["attempt_id"],
        index=row["idx"],
        author=row["author"],
        text=row["text"],
        calls=tuple(CallRecord(**call) for call in json.loads(row["calls"])),
        messages=tuple(json.loads(row["messages"])),
        checkpoint=row["checkpoint"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        cached_tokens=row["cached_tokens"],
        estimated=bool(row["estimated"]),
        entropy=row["entropy"],
        duration_s=row["duration_s"],
        format_error=bool(row["format_error"]),
        context_ids=_tuple(row["context_ids"]),
        completion_ids=_tuple(row["completion_ids"]),
        completion_logprobs=_tuple(row["completion_logprobs"]),
        changes=_changes(row["changes"]),
    )


def _json_list(values: tuple[Any, ...] | None) -> str | None:
    return None if values is None else json.dumps(list(values))


def _tuple(text: str | None) -> tuple[Any, ...] | None:
    return None if text is None else tuple(json.loads(text))


def _json_changes(changes: tuple[Change, ...] | None) -> str | None:
    """A turn's changes as JSON: `[{"path": ..., "kind": ..., "size": ...}, ...]`."""
    return None if changes is None else json.dumps([dataclasses.asdict(c) for c in changes])


def _changes(text: str | None) -> tuple[Change, ...] | None:
    return None if text is None else tuple(Change(**change) for change in json.loads(text))
