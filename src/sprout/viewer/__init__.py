"""The episode viewer: a run's search trees as plain JSON, for a page to draw.

`sprout.viewer.data` reads a run folder into JSON-ready dicts; the page (served by
`sprout view`, or embedded in report.html) only ever sees those, never SQLite.
"""

from sprout.viewer.data import ViewerError, run_summary, task_tree
from sprout.viewer.turns import turn_detail

__all__ = ["ViewerError", "run_summary", "task_tree", "turn_detail"]
