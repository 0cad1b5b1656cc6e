"""The rollout tree of a run: its records, its typed meta, and the SQLite database under it.

One package, one face: callers import from `sprout.tree` alone. `rollout` is the tree
(`RolloutTree`, the only writer of a run), `records` its plain frozen records, `meta` what
the run records about itself (`RunMeta`), and `database` the tables the tree is built on,
private to this package.
"""

from __future__ import annotations

from sprout.tree.database.errors import RunDatabaseError
from sprout.tree.meta import (
    Concurrency,
    ImportedAttempt,
    Placement,
    RayPlacements,
    RebuiltCheckpoint,
    RunMeta,
    TokenizerFingerprint,
)
from sprout.tree.records import (
    Attempt,
    AttemptStatus,
    Author,
    CallRecord,
    Fault,
    Message,
    ModelCallRecord,
    Role,
    TokenTotals,
    Turn,
    boundary_problem,
    passes,
    shares_prefix,
)
from sprout.tree.rollout import CheckpointRef, RolloutTree, TreeError, referenced_checkpoints
from sprout.workspace import Change, ChangeReader

__all__ = [
    "Attempt", "AttemptStatus", "Author", "CallRecord", "Change", "ChangeReader",
    "CheckpointRef", "Concurrency", "Fault", "ImportedAttempt", "Message", "ModelCallRecord",
    "Placement", "RayPlacements", "RebuiltCheckpoint", "Role", "RolloutTree", "RunDatabaseError",
    "RunMeta", "TokenTotals", "TokenizerFingerprint", "TreeError", "Turn", "boundary_problem",
    "passes", "referenced_checkpoints", "shares_prefix",
]  # fmt: skip
