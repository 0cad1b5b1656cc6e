"""`sprout mini-batch`: mini-swe-agent's `DefaultAgent` on many sprout tasks, in the manner
of `mini-extra swebench`, each on sprout's environment.

`mini-extra swebench` itself gives an environment the instance's image only for its own
environment classes (`get_sb_environment`), so it cannot tell sprout's which task an
instance is. This runner takes sprout tasks (folders, SWE-bench rows) and writes what
`mini-extra swebench` writes, so its users' tools read it unchanged: `OUT/preds.json`
(the submissions by instance id) and `OUT/ID/ID.traj.json` (each trajectory); beside
them `OUT/ID/run`, the sprout run of each instance, a checkpoint per step, which
`sprout view`, `sprout shell` and `sprout run --from-trajectories OUT` read.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sprout.durable import write_atomically
from sprout.errors import SproutError
from sprout.integrations.minisweagent.environment import SproutEnvironment
from sprout.task import Task

ENVIRONMENT_KEYS = ("cwd", "env", "timeout")
"""The `environment` keys sprout's environment applies; the others are the containers'."""
_preds = threading.Lock()


class PredsError(SproutError, ValueError):
    """An OUT/preds.json that is not mini-extra's object of submissions by instance id."""


@dataclass(frozen=True)
class InstanceResult:
    """How one instance ended: mini-swe-agent's exit status and its submission."""

    instance_id: str
    exit_status: str
    submission: str


def run_batch(
    tasks: Sequence[Task],
    config: dict[str, Any],
    output: Path,
    *,
    workers: int = 1,
    redo_existing: bool = False,
    said: Callable[[str], None] = print,
) -> list[InstanceResult]:
    """Every task of `tasks` not in `output`'s preds.json yet (all with `redo_existing`),
    `workers` at once; each result said as it ends."""
    output.mkdir(parents=True, exist_ok=True)
    held = _read_preds(output)  # read first, so that a bad one ends the batch before it starts
    done = set() if redo_existing else set(held)
    todo = [task for task in tasks if task.id not in done]
    if done:
        said(f"skipping {len(tasks) - len(todo)} instances already in {output / 'preds.json'}")

    def one(task: Task) -> InstanceResult:
        result = run_instance(task, config, output)
        said(f"{task.id}: {result.exit_status}")
        return result

    with ThreadPoolExecutor(max_workers=max(workers, 1)) as pool:
        return list(pool.map(one, todo))


def run_instance(task: Task, config: dict[str, Any], output: Path) -> InstanceResult:
    """One task as `mini-extra swebench` runs one instance: its trajectory saved and its
    submission in preds.json however it ended; an error of the agent or the sandbox is its
    exit status, never a submission."""
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.models import get_model

    instance_dir = output / task.id
    trajectory = instance_dir / f"{task.id}.traj.json"
    trajectory.unlink(missing_ok=True)
    model = get_model(config=config.get("model", {}))
    section = config.get("environment", {})
    keys = {key: section[key] for key in ENVIRONMENT_KEYS if key in section}
    agent = None
    environment = None
    exit_status, submission, extra = "", "", {}
    try:
        environment = SproutEnvironment.for_task(task, instance_dir / "run", **keys)
        agent = DefaultAgent(model, environment, **config.get("agent", {}))
        info = agent.run(task.instruction)
        exit_status, submission = str(info.get("exit_status")), str(info.get("submission") or "")
    except Exception as error:  # the instance's end, as mini-extra records it
        exit_status = type(error).__name__
        extra = {"traceback": traceback.format_exc(), "exception_str": str(error)}
    finally:
        if environment is not None:
            environment.cleanup(exit_status, str(extra.get("exception_str", "")))
        if agent is not None:
            info = {"exit_status": exit_status, "submission": submission, **extra}
            agent.save(trajectory, {"info": info, "instance_id": task.id})
        _add_pred(output, task.id, str(model.config.model_name), submission)
    return InstanceResult(task.id, exit_status, submission)


def _read_preds(output: Path) -> dict[str, Any]:
    path = output / "preds.json"
    if not path.exists():
        return {}
    try:
        found = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PredsError(f"{path}: not JSON ({error})") from None
    if not isinstance(found, dict):
        raise PredsError(f"{path}: expected an object of submissions by instance id")
    return found


def _add_pred(output: Path, instance_id: str, model_name: str, patch: str) -> None:
    """preds.json with this instance's submission, in mini-extra's shape."""
    with _preds:
        preds = _read_preds(output)
        preds[instance_id] = {
            "model_name_or_path": model_name,
            "instance_id": instance_id,
            "model_patch": patch,
        }
        write_atomically(str(output / "preds.json"), json.dumps(preds, indent=2) + "\n", True)
