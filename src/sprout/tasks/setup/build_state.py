"""What one base layer's build holds while its steps run: the task, the store, what its
sandboxes are given, the stages built so far, and how a failed step is reported.

`steps.Build` runs the steps on it; a copy step (`copy.run_copy`), which `Build` runs and
which copies from stages `Build` makes, takes this alone, so it lives below both.
"""

from __future__ import annotations

from collections.abc import Callable

from sprout.sandbox import LayerStore, Observation, Sandbox
from sprout.task import SetupFailed, Task


class BuildState:
    """One base layer's build: the task, the store, what a sandbox over an image is given
    first, and the checkpoints of the earlier stages built so far."""

    def __init__(
        self,
        task: Task,
        layers: LayerStore,
        *,
        env: dict[str, str],
        prepare: Callable[[Sandbox], None],
        timeout: float,
        error_lines: int,
    ) -> None:
        self.task = task
        self.layers = layers
        self.env = env
        """The environment of the build's sandboxes, under each step's own."""
        self.prepare = prepare
        """Readies a fresh sandbox over an image (not `host`): its name service, say."""
        self.timeout = timeout
        """Seconds one step may take."""
        self.error_lines = error_lines
        """How many of a failed step's last lines its error carries."""
        self.built: dict[int, str] = {}
        """Stage index -> the checkpoint with all its steps run."""
        self.claimed: set[str] = set()
        """Directories an earlier WORKDIR step made or found: a later one leaves them be."""

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
