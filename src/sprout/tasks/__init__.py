"""Task sources: the native folder layout (Terminal-Bench 2 / Harbor plus `[sprout]`)."""

from sprout.tasks.discover import LoadedTasks, load_tasks
from sprout.tasks.environment import base_checkpoint
from sprout.tasks.native import load_native, split_solution

__all__ = ["LoadedTasks", "base_checkpoint", "load_native", "load_tasks", "split_solution"]
