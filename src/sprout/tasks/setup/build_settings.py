"""What every step of one base layer's build is given: the task, the store, what its
sandboxes start with, how long a step may take and how a failed step is reported.

`steps.Build` runs the steps with it, and hands it to a copy step (`copy.run_copy`), which
takes nothing else of the build: it lives below both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sprout.sandbox import LayerStore, Observation, Sandbox
from sprout.task import SetupFailed, Task


@dataclass(frozen=True)
class BuildSettings:
    """One base layer's build, as each of its steps sees it."""

    task: Task
    layers: LayerStore
    env: dict[str, str]
    """The environment of the build's sandboxes, under each step's own."""
    prepare: Callable[[Sandbox], None]
    """Readies a fresh sandbox over an image (not `host`): its name service, say."""
    timeout: float
    """Seconds one step may take."""
    error_lines: int
    """How many of a failed step's last lines its error carries."""

    def check(self, label: str, what: str, observation: Observation) -> None:
        """TaskError when a step's command failed, with the last lines it printed."""
        if observation.exit_code != 0:
            tail = observation.output.strip().splitlines()[-self.error_lines :]
            last = tail[-1] if tail else "(no output)"
            raise SetupFailed(
                f"{self.task.id}: {label} ({what[:80]!r}) failed with exit code "
                f"{observation.exit_code}: {last}",
                f"$ {what}\n" + "\n".join(tail),
            )
