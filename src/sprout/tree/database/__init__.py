"""SQLite persistence of a run: one file (WAL), a schema version, and migrations.

The only code that writes SQL, private to the rollout tree: `RolloutTree` is built on
these tables, and nothing outside `sprout.tree` imports them. One module per job: `schema`
(the migrations), `connection` (opening the file, versions, transactions), `errors` (a
file that cannot be used, in one line), `rows` (records as plain JSON columns and back),
and the tables: `attempts` (tasks, attempts, turns), `calls` (model calls, analyses,
reviews), `schedules` (schedules, and when things ended), `run_meta` (the run's meta).
"""

from __future__ import annotations

from sprout.tree.database.attempts import AttemptTables
from sprout.tree.database.calls import CallTables
from sprout.tree.database.run_meta import MetaTable
from sprout.tree.database.schedules import ScheduleTables

__all__ = ["RunTables"]


class RunTables(AttemptTables, CallTables, ScheduleTables, MetaTable):
    """Every table of one run's database, on one connection (`Database`): what
    `RolloutTree` is built on."""
