"""Task sources: the native folder layout (Terminal-Bench 2 / Harbor plus `[sprout]`)."""

from sprout.tasks.environment import base_checkpoint
from sprout.tasks.native import load_native, split_solution

__all__ = ["base_checkpoint", "load_native", "split_solution"]
