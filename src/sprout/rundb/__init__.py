"""SQLite persistence of a run: one file (WAL), a schema version, and migrations.

The only code that writes SQL, and only the rollout tree (`sprout.tree`) calls it. One
module per job: `schema` (the migrations), `database` (opening the file, versions,
transactions), `errors` (a file that cannot be used, in one line), `rows` (records as
plain JSON columns and back), and the tables: `attempts` (tasks, attempts, turns),
`calls` (model calls, analyses, reviews), `progress` (settings, schedules, times).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sprout.rundb.attempts import AttemptTables
from sprout.rundb.calls import CallTables
from sprout.rundb.errors import RunDatabaseError, explain
from sprout.rundb.progress import ProgressTables
from sprout.rundb.schema import MIGRATIONS, SCHEMA_VERSION

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "RunDatabase",
    "RunDatabaseError",
    "referenced_checkpoints",
]


class RunDatabase(AttemptTables, CallTables, ProgressTables):
    """One run's rollout tree in SQLite, safe to share between threads: every table on one
    connection (`Database`).

    `readonly` opens an existing store without writing anything (no migration): what GC
    reads a run's checkpoints with.
    """


def referenced_checkpoints(path: str | Path) -> set[str]:
    """The checkpoints the run in database `path` references (`RunDatabase.checkpoints`), read
    without writing the file; RunDatabaseError when it cannot be read."""
    store = RunDatabase(path, readonly=True)
    try:
        return store.checkpoints() if store.version else set()
    except sqlite3.Error as error:
        raise explain(store.path, error) from None
    finally:
        store.close()
