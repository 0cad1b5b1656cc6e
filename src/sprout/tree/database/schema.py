"""The run database's tables, as the migrations that build them one version at a time.

A database of an older version is brought up to date by running the migrations it lacks,
in order; a migration is never edited once released (databases in the field were built by
it), so a change of schema is one more entry at the end.
"""

from __future__ import annotations

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
    """
    ALTER TABLE attempts ADD COLUMN restarts INTEGER REFERENCES attempts(id);
    """,
    # How an attempt's turns ended ({"status", "reason"}) when its verifier then failed: a
    # verifier's fault is the attempt's `error`, and --resume verifies it again as it was.
    # Runs of earlier versions stored such a fault as a reward of 0: they become errors.
    """
    ALTER TABLE attempts ADD COLUMN played TEXT;
    UPDATE attempts SET
        played = json_object('status', status, 'reason', end_reason),
        status = 'error',
        fault = 'verifier',
        reward = NULL,
        end_reason = 'verifier: ' || replace(
            coalesce(json_extract(diagnostics, '$.summary'), 'it did not run'),
            'the verifier failed: ', ''
        )
    WHERE status != 'error' AND json_extract(diagnostics, '$.source') = 'verifier-error';
    """,
    # sprout's own crash is the fault `sprout`; earlier versions called it `harness`.
    """
    UPDATE attempts SET fault = 'sprout' WHERE fault = 'harness';
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version of a database that every migration has run on (`PRAGMA user_version`)."""
