"""Search schedules (`pass@k`, `sprout`, `entropy`, `shepherd`), the training schedule
(`train-rollouts`), all by name in `sprout.search.registry`, and `sprout run` over many
tasks."""

from sprout.search.methods import Method, MethodError, parse_rounds
from sprout.search.registry import parse_methods
from sprout.search.run_progress import Progress
from sprout.search.runner import RunSettings, RunSettingsError, open_run, run_tasks
from sprout.search.schedules import SearchError
from sprout.search.summary import results, table, write_results

__all__ = [
    "Method",
    "MethodError",
    "Progress",
    "RunSettings",
    "RunSettingsError",
    "SearchError",
    "open_run",
    "parse_methods",
    "parse_rounds",
    "results",
    "run_tasks",
    "table",
    "write_results",
]
