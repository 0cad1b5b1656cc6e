"""Files an image holds that the agent must not see (`Task.withheld`): taken out of
checkpoint 0, and put back on the verifier's fork only.

Some publishers ship a task's hidden tests inside its image (R2E-Gym's /r2e_tests and
run_tests.sh) and move them away before their agent starts. Here the last set-up step
seals the filesystem as it is, then removes the paths: checkpoint 0 stacks on that sealed
layer, whose copies the whiteouts above it hide from every sandbox. That layer is the
hidden storage: it travels wherever checkpoint 0 does (adopted, shipped to a node), since
checkpoint 0 needs it, and only the verifier reads the paths out of it, walking checkpoint
0's layers down to the first that still has each one.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import Task, TaskError

MISSING = 3
"""The exit status of the check that finds a withheld path missing."""


def withhold(task: Task, sandbox: Sandbox, timeout: float) -> None:
    """Take `task.withheld` out of the set-up sandbox, after its set-up steps: each path
    must be there (a withheld path the image lacks is the task's error, found at set-up
    rather than as a verifier with nothing to run)."""
    if not task.withheld:
        return
    quoted = " ".join(shlex.quote(path) for path in task.withheld)
    check = sandbox.run(
        f'for p in {quoted}; do [ -e "$p" ] || [ -L "$p" ] || {{ echo "$p"; exit {MISSING}; }};'
        " done",
        timeout=timeout,
    )
    if check.exit_code == MISSING:
        missing = _last_line(check.output)
        raise TaskError(f"{task.id}: withheld {missing}: not in the image after set-up")
    sandbox.checkpoint(always=True)  # the layer that keeps them, under checkpoint 0
    removed = sandbox.run(f"rm -rf -- {quoted}", timeout=timeout)
    for step in (check, removed):
        if step.exit_code != 0:
            why = "timed out" if step.exit_code is None else _last_line(step.output)
            raise TaskError(f"{task.id}: withheld {' '.join(task.withheld)}: {why}")


def _last_line(output: str) -> str:
    return next((line for line in reversed(output.splitlines()) if line.strip()), "no output")


def put_back(task: Task, layers: LayerStore, base_checkpoint: str, sandbox: Sandbox) -> None:
    """Copy `task.withheld` into the verifier's fork `sandbox`, from the layer under
    checkpoint `base_checkpoint` that still holds them; each replaces what the attempt
    left at its path. Staged in the fork's own scratch folder, as the hidden tests are: a
    run killed here leaves them where the next start's sweep removes them."""
    if not task.withheld:
        return
    below = layers.ancestry(base_checkpoint)
    scratch = layers.scratch_dir(sandbox.upper)
    os.makedirs(scratch, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="withheld-", dir=scratch) as staging:
        for number, path in enumerate(task.withheld):
            copy = Path(staging, str(number))
            if any(layers.export(layer_id, path, copy) for layer_id in below):
                sandbox.put(copy, path)
