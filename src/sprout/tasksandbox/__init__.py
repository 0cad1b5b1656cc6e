"""A task's sandbox work in one layer store, wherever that store is: checkpoint 0, the
verifier, lost checkpoints rebuilt, forks.

Two places do this work: `sprout.search.sandboxes.LocalSandboxes` in the run folder's store
on this machine, and `sprout.cluster.host.TaskHost`, the Ray actor holding a task's store on
a node. Search may not import the cluster, nor the cluster search, so the work both share
lives here, below both. It belongs to the filesystem half: it imports the sandbox, tasks,
the verifier and the leaves, and never the tree, models or search.
"""

from sprout.tasksandbox.service import TaskSandboxService

__all__ = ["TaskSandboxService"]
