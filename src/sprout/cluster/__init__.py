"""Running a run's sandbox work on a Ray cluster (`sprout run --ray`): one actor per task,
placed by Ray, holding the task's layers on its node; the driver keeps the schedules, the
tree and the one writer of `sprout.db`."""

from sprout.cluster.joining import ClusterError, default_store, join, leave
from sprout.cluster.sandboxes import Placement, RaySandboxes
from sprout.cluster.ship import fetch

__all__ = [
    "ClusterError",
    "Placement",
    "RaySandboxes",
    "default_store",
    "fetch",
    "join",
    "leave",
]
