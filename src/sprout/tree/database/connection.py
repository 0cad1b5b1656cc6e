"""The connection under a run's database: opening the file, its schema version, transactions.

Every table of the database (`attempts`, `calls`, `schedules`, `meta` beside this module)
writes through `Database.transaction`, so a write is committed whole or not at all, and a
file that cannot be written says so in one line (`errors`) instead of a traceback.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sprout.tree.database.errors import RunDatabaseError, explain, unwritable
from sprout.tree.database.schema import MIGRATIONS, SCHEMA_VERSION


class Database:
    """One SQLite file (WAL), migrated to SCHEMA_VERSION, safe to share between threads.

    `readonly` opens an existing file without writing anything (no migration): what GC
    reads a run's checkpoints with.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.database = Path(path)
        """The SQLite file, for messages that name it."""
        self._lock = threading.RLock()
        self.version = 0
        """The schema version of the file (SCHEMA_VERSION once migrated)."""
        if self.database.is_dir():
            raise RunDatabaseError(
                f"{self.database}: a folder, not a SQLite file; move it away (or choose another "
                "run folder)"
            )
        if readonly and not self.database.is_file():
            raise RunDatabaseError(f"{self.database}: no such file")
        try:
            if readonly:
                uri = f"{self.database.resolve().as_uri()}?mode=ro"
                self._db = sqlite3.connect(
                    uri, uri=True, check_same_thread=False, isolation_level=None
                )
            else:
                self._db = sqlite3.connect(
                    self.database, check_same_thread=False, isolation_level=None
                )
        except sqlite3.Error as error:
            raise explain(self.database, error) from None
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
            raise explain(self.database, error) from None
        except RunDatabaseError:
            self._db.close()
            raise

    def check_writable(self) -> None:
        """Raise RunDatabaseError now, rather than at the first turn, when this process cannot
        write the database: read-only, or locked by another writer (after SQLite's 5 s wait)."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    version = self._db.execute("PRAGMA user_version").fetchone()[0]
                    self._db.execute(f"PRAGMA user_version={int(version)}")  # a write, undone
                finally:
                    self._db.execute("ROLLBACK")
            except sqlite3.OperationalError as error:
                raise explain(self.database, error) from None

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
            raise RunDatabaseError(
                f"{self.database}: not a sprout run database (it holds other tables)"
            )
        if version > SCHEMA_VERSION:
            raise RunDatabaseError(
                f"{self.database}: schema version {version} is newer than this sprout "
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
        """One write, committed whole or not at all; a database that cannot be written (locked
        by another process, read-only, a full disk) raises RunDatabaseError naming the file, and
        what was committed before stays."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                raise explain(self.database, error) from None
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as error:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(error, sqlite3.OperationalError) and unwritable(error):
                    raise explain(self.database, error) from None
                raise

    def close(self) -> None:
        with self._lock:
            self._db.close()
