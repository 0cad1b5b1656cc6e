"""Task sources: the native folder layout (Terminal-Bench 2 / Harbor plus `[sprout]`),
Terminal-Bench 1 folders and SWE-bench JSONL."""

from sprout.tasks.discover import LoadedTasks, load_image_table, load_tasks
from sprout.tasks.environment import base_checkpoint_of, solution_checkpoint
from sprout.tasks.native import load_native
from sprout.tasks.solution_script import split_solution
from sprout.tasks.swebench import load_swebench
from sprout.tasks.terminal_bench1 import load_terminal_bench1

__all__ = [
    "LoadedTasks",
    "base_checkpoint_of",
    "load_image_table",
    "load_native",
    "load_swebench",
    "load_tasks",
    "load_terminal_bench1",
    "solution_checkpoint",
    "split_solution",
]
