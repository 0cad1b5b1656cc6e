"""What the cluster tests read of a `sprout run --ray` they started: the end of its process,
and from its run folder each attempt's verdict, where each task was placed, and which store
sealed a checkpoint."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout.runfolder import RunFolder
from sprout.sandbox import LayerStore
from tests.support.repo_paths import EXAMPLE_TASKS

TASKS = [str(EXAMPLE_TASKS / "blog-slugs"), str(EXAMPLE_TASKS / "invoice-rounding")]
"""Two example tasks: what the runs on a cluster play."""
RUN_TIMEOUT_S = 400


def finished(
    process: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = RUN_TIMEOUT_S
) -> tuple[int, str]:
    """The run's exit code and output, once it ended within `timeout` seconds (killed and
    failed otherwise)."""
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"the run outlived {timeout} s:\n{_text(output)[-3000:]}")
    return process.returncode, _text(output)


def _text(output: bytes | str) -> str:
    return output.decode() if isinstance(output, bytes) else output


def shape(out: Path) -> dict[tuple[str, str], list[tuple[str, str, float | None]]]:
    """Per (task, method): each attempt's kind, status and reward, oldest first."""
    run = RunFolder.open(out)
    try:
        found: dict[tuple[str, str], list[tuple[str, str, float | None]]] = {}
        for attempt in run.tree.attempts():
            key = (attempt.task_id, attempt.method)
            found.setdefault(key, []).append((attempt.kind, attempt.status, attempt.reward))
        return found
    finally:
        run.close()


def placements(out: Path) -> list[dict[str, Any]]:
    """Where the run placed its tasks (node, store, why), as its `ray` meta records them."""
    run = RunFolder.open(out)
    try:
        meta = run.tree.meta().ray
    finally:
        run.close()
    return [] if meta is None else [placement.to_json() for placement in meta.placements]


def sealed_in(store: str, checkpoint: str) -> bool:
    """Whether `checkpoint` was sealed in `store` (not adopted there from another one)."""
    diff = LayerStore(store).diff_dir(checkpoint)  # a capped layer's: a link into s/ID/u
    return os.path.isdir(diff) and os.path.realpath(diff).startswith(os.path.realpath(store) + "/")
