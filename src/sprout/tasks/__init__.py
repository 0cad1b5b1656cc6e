"""Tasks as their publishers ship them, and the checkpoint 0 each starts from.

Three wings: `sources/` (one module per format: the native folder layout, Terminal-Bench
2 / Harbor plus `[sprout]`, Terminal-Bench 1 folders, SWE-bench JSONL), `dockerfile/` (a
task's Dockerfile read and translated) and `setup/` (checkpoint 0: the image, set-up steps,
copies, users). At the top: `discover` (paths to tasks, across the sources), the one folder
digest (`digest`), files and image references (`files`, `imageref`).
"""

from sprout.tasks.discover import LoadedTasks, load_image_table, load_tasks
from sprout.tasks.setup.checkpoint import base_checkpoint_of, solution_checkpoint
from sprout.tasks.sources.native import load_native
from sprout.tasks.sources.solution_script import split_solution
from sprout.tasks.sources.swebench import load_swebench
from sprout.tasks.sources.terminal_bench1 import load_terminal_bench1

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
