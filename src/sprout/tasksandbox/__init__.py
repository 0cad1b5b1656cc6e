"""A task's sandbox work in one layer store, wherever that store is: checkpoint 0, the
verifier, lost checkpoints rebuilt, forks.

`TaskSandboxes` (`protocol.py`) is that work as search asks for it. `TaskSandboxService`
does it in one store: the run folder's on this machine, or, inside
`sprout.cluster.host.TaskHost`, the Ray actor holding a task's store on a node; the
cluster's `RaySandboxes` implements the protocol over those actors. Search may not import
the cluster, nor the cluster search, so the protocol and the work both share live here,
below both. It belongs to the filesystem half: it imports the sandbox, tasks, the verifier
and the leaves, and never the tree, models or search.
"""

from sprout.tasksandbox.protocol import TaskSandboxes
from sprout.tasksandbox.service import TaskSandboxService

__all__ = ["TaskSandboxService", "TaskSandboxes"]
