"""The run-level invariant every test is held to: whatever a test did with the command
line (`run`, `train`, `gc`, `image`, `tasks check`, `export`, `shell`), every checkpoint
that a run folder's `sprout.db` references still opens.

"Opens" is what a fork needs: the checkpoint's metadata and the files of each layer its
stack mounts, in the run's `layers/` or, for a `--ray` run, the node store its meta names.
A test whose runs' checkpoints do not all open from their folders on purpose (lost with
a node, or in node stores that no `sprout run` recorded in the run's meta) says so, and
why, with `@pytest.mark.checkpoints_elsewhere("why")`.
"""

from __future__ import annotations

import os
from pathlib import Path

from sprout.runfolder import RunFolder, RunFolderError
from sprout.sandbox import SandboxError
from sprout.tree import CheckpointRef, RunDatabaseError

DEPTH = 3
"""How deep under a test's temporary folder run folders are looked for."""


def run_folders(root: Path) -> list[Path]:
    """The run folders (a sprout.db beside layers/) within DEPTH levels of `root`."""
    found = []
    for depth in range(DEPTH + 1):
        for database in root.glob("/".join(["*"] * depth + ["sprout.db"])):
            folder = database.parent
            if (folder / "layers").is_dir() or (folder / "layers").is_symlink():
                found.append(folder)
    return found


def unopened_checkpoints(folder: Path) -> list[str]:
    """`ATTEMPT:k (ID): why` for each checkpoint of the run in `folder` that does not open;
    a folder whose database cannot be read (a test of bad files) has none to check."""
    try:
        run = RunFolder.open(folder)
    except (RunDatabaseError, RunFolderError):
        return []
    try:
        problems = []
        for attempt in run.tree.attempts():
            for boundary in range(run.tree.last_index(attempt) + 1):
                checkpoint = run.tree.checkpoint(attempt, boundary)
                why = _why_not_open(run, attempt.task_id, checkpoint)
                if why is not None:
                    ref = CheckpointRef(attempt.id, boundary)
                    problems.append(f"{ref} ({checkpoint}): {why}")
        return problems
    finally:
        run.close()


def _why_not_open(run: RunFolder, task_id: str, checkpoint: str) -> str | None:
    try:
        store = run.store_of(task_id, checkpoint)
        stack = store.stack(checkpoint)
    except (SandboxError, RunFolderError) as error:
        return str(error)
    missing = [layer for layer in stack if not os.path.isdir(store.diff_dir(layer))]
    return f"layers without files in {store.path}: {', '.join(missing)}" if missing else None
