"""Why a run's database cannot be used, in one line that names the file and what would fix it.

SQLite's own messages ("database is locked", "attempt to write a readonly database") name
neither the file nor the way out; a user who meets one mid-run needs both.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from sprout.durable import describe_processes, lock_holders
from sprout.errors import SproutError

WAL_WRITE_LOCK = 120
"""The byte of the -shm file that SQLite's WAL writer locks: whoever holds it is writing."""


class RunDatabaseError(SproutError):
    """The database file cannot be used (newer schema, not a sprout run database, a folder,
    read-only, locked by another process); the message names the file and what would fix
    it."""


def explain(path: Path, error: sqlite3.Error) -> RunDatabaseError:
    """`error`, met on the database `path`, as one line that names the file and says what
    to do."""
    name = getattr(error, "sqlite_errorname", "")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return RunDatabaseError(f"{path}: {locked_by(path)}")
    if name.startswith("SQLITE_READONLY") or (
        name.startswith("SQLITE_CANTOPEN")
        and path.parent.is_dir()
        and not os.access(path.parent, os.W_OK)
    ):
        where = path if path.exists() and not os.access(path, os.W_OK) else path.parent
        return RunDatabaseError(
            f"{path}: read-only ({where} cannot be written) and sprout needs to write it "
            "(every turn, and SQLite's journal beside it); make it writable, or copy the "
            "run folder somewhere writable"
        )
    if name.startswith("SQLITE_CANTOPEN"):
        return RunDatabaseError(f"{path}: cannot be opened ({error})")
    if name.startswith("SQLITE_FULL"):
        return RunDatabaseError(f"{path}: the disk is full; free space, then --resume")
    if name.startswith("SQLITE_IOERR"):
        return RunDatabaseError(f"{path}: the disk failed to read or write it ({error})")
    if name.startswith("SQLITE_NOTADB"):
        return RunDatabaseError(
            f"{path}: not a sprout run database ({error}); move it away or choose another "
            "run folder"
        )
    return RunDatabaseError(f"{path}: not a sprout run database ({error})")


def locked_by(path: Path) -> str:
    """Why a write to the database `path` waited in vain: the process writing the file,
    named where /proc says."""
    writers = lock_holders(f"{path}-shm", kind="POSIX", write_at=WAL_WRITE_LOCK)
    writers = [pid for pid in writers if pid != os.getpid()]
    return (
        f"locked: {describe_processes(writers)} is writing it (another sprout using this "
        "run folder?); wait for it to end or stop it, then run again (nothing saved is lost)"
    )


def unwritable(error: sqlite3.OperationalError) -> bool:
    """The file, not the statement, is at fault: say so in one line rather than a traceback."""
    name = getattr(error, "sqlite_errorname", "")
    return name.startswith(
        ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_READONLY", "SQLITE_FULL", "SQLITE_IOERR")
    )
