"""The `meta` table: the run's `RunMeta`, one row per field (its name and its JSON)."""

from __future__ import annotations

import json

from sprout.tree.database.connection import Database
from sprout.tree.meta import RunMeta


class MetaTable(Database):
    """The `meta` table, read as one `RunMeta` and written a field at a time."""

    def meta(self) -> RunMeta:
        """What the run recorded about itself (rows of names it does not know ignored)."""
        with self._lock:
            rows = self._db.execute("SELECT key, value FROM meta").fetchall()
        return RunMeta.model_validate({row["key"]: json.loads(row["value"]) for row in rows})

    def update_meta(self, changes: RunMeta) -> None:
        """Record the fields `changes` was made with, leaving the others as they are."""
        rows = [(name, json.dumps(value)) for name, value in changes.rows().items()]
        with self.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", rows)
