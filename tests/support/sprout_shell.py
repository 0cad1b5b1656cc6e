"""`sprout shell RUN ATTEMPT:k` as a user types it: one command on its stdin, what it
printed back (the shell must exit 0)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.repo_paths import SPROUT


def sprout_shell(run: Path, ref: str, command: str) -> str:
    """What `command` prints in a shell on checkpoint `ref` of the run folder `run`."""
    found = subprocess.run(
        [str(SPROUT), "shell", str(run), ref],
        input=command + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.returncode == 0, found.stderr
    return found.stdout
