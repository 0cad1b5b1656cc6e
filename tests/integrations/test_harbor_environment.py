"""sprout's sandbox as a Harbor environment: Harbor's own trial, with its oracle agent and
its do-nothing agent, on a Terminal-Bench 2 task in sprout's jail.

Harbor needs Python 3.12 or later, so the trial runs in the second virtualenv `make test`
makes (`.venv-harbor`, sprout installed in it too); the reward is read as Harbor reads it,
from the trial's result.json, and the trial's sprout run from its folder.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sprout.runfolder import RunFolder
from tests.support.requirements import require_host_image
from tests.support.sprout_shell import sprout_shell
from tests.support.taskfolders import harbor_task

pytestmark = pytest.mark.sandbox
TRIAL = Path(__file__).parents[1] / "support" / "harbor_trial.py"


def harbor_python() -> str:
    python = os.environ.get("SPROUT_HARBOR_PYTHON")
    if not python:
        pytest.skip(
            "no virtualenv with Harbor (it needs Python 3.12+): `make test` makes "
            ".venv-harbor where scripts/python-for-harbor finds one"
        )
    return python


def trial(tmp_path: Path, agent: str) -> Path:
    """Harbor's trial of `agent` on the count task; its folder."""
    task = harbor_task(tmp_path / "tasks")
    trials = tmp_path / f"trials-{agent}"
    done = subprocess.run(
        [harbor_python(), str(TRIAL), str(task), agent, str(trials)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},  # no price list fetched
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [folder] = trials.iterdir()
    return folder


def reward(folder: Path) -> float:
    """The reward as Harbor reads it: its verifier's result in the trial's result.json."""
    result = json.loads((folder / "result.json").read_text())
    assert result["exception_info"] is None, result["exception_info"]
    return float(result["verifier_result"]["rewards"]["reward"])


def test_harbor_oracle_passes_on_sprouts_environment(tmp_path: Path) -> None:
    """The oracle's solution runs in the jail, as the task's agent user and with the agent
    phase's network (none), and the verifier gives 1; the trial's folder
    holds a sprout run with the same reward, a checkpoint per command, and the checkpoint
    after the oracle's solution opens with the solved file."""
    require_host_image()
    folder = trial(tmp_path, "oracle")
    assert reward(folder) == 1.0
    assert (folder / "verifier" / "reward.txt").read_text().strip() == "1"
    run = RunFolder.open(folder / "sprout-run")
    try:
        [attempt] = run.tree.attempts()
        turns = run.tree.own_turns(attempt)
    finally:
        run.close()
    assert attempt.reward == 1.0
    solved = next(
        t for t in turns if "/solution/solve.sh" in t.calls[0].command and ">" in t.calls[0].command
    )
    files = "cat /app/count.txt /app/who.txt /app/routes.txt"
    shell = sprout_shell(folder / "sprout-run", f"1:{solved.index}", files)
    assert shell == "1\nagent\n0\n", "solved, as the task's agent user, offline"


def test_harbor_nop_agent_fails_the_untouched_task(tmp_path: Path) -> None:
    """An agent that does nothing leaves count.txt at 0: Harbor's verifier gives 0."""
    require_host_image()
    folder = trial(tmp_path, "nop")
    assert reward(folder) == 0.0
    run = RunFolder.open(folder / "sprout-run")
    try:
        [attempt] = run.tree.attempts()
    finally:
        run.close()
    assert attempt.reward == 0.0
