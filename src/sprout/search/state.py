"""What a search is over: one method on one task, with the tree, sandboxes and actor it
plays in.

`play.Search` plays rounds over it, and `recover` rebuilds and restarts a lost attempt
with it alone, so it lives below both: recover takes this, the class `Search` is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sprout.agent import Actor
from sprout.search.halt import Halt
from sprout.search.methods import Method
from sprout.search.run_progress import Progress
from sprout.search.slots import Slots
from sprout.task import Task
from sprout.tasksandbox import TaskSandboxes
from sprout.tree import Message, RolloutTree


@dataclass
class SearchState:
    """One method on one task: what its schedule needs, shared by the threads of a round."""

    task: Task
    method: Method
    tree: RolloutTree
    sandboxes: TaskSandboxes
    """Where the task's sandboxes run: its verifier too."""
    actor: Actor
    base_checkpoint: str
    """Checkpoint 0: the task's untouched environment, where a rebuild replays from and a
    restarted root starts."""
    prefix: list[Message]
    """What every root's context starts with: the system prompt and the task."""
    slots: Slots
    """Sandboxes that may run at once across the whole run (`--workers`)."""
    workers: int
    """Attempts of one round started at once: with fewer workers than branches, the
    reviewer's first plans run first, and a pass stops the rest before they start."""
    progress: Progress
    halt: Halt = field(default_factory=Halt)
    """Shared by the whole run: once set, nothing new starts and attempts stop between turns."""
