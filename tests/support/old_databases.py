"""Run databases as an earlier sprout left them: the schema's first migrations only, for
the tests of the migrations that follow."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sprout.tree.database.schema import MIGRATIONS


def database_at_version(path: Path, version: int) -> sqlite3.Connection:
    """A connection to a new `sprout.db` at `path` built by the first `version` migrations
    (schema version `version`), to write old rows into (`with` it to commit them); the
    caller closes it."""
    db = sqlite3.connect(path)
    for migration in MIGRATIONS[:version]:
        db.executescript(migration)
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    return db
