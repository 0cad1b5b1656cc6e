"""`sprout train --tasks-per-step 4` on 40 rows of SWE-rebench V2 that all name one image the
test pushed to its registry: each step plays its 4 drawn tasks, a run killed (SIGKILL) in
step 2 resumes with the same draw, the image is pulled once, and a task never drawn is never
touched."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sprout.cli import main
from sprout.images import ImageCache
from sprout.pipeline.task_draw import step_tasks
from sprout.runfolder import RunFolder
from sprout.tasks import load_tasks
from tests.support.registry_world import Registry
from tests.support.requirements import require_overlay
from tests.support.row_images import push_repo_image
from tests.support.run_watch import count, wait_until
from tests.support.swerebench_rows import rebench_row, write_rows
from tests.support.train_command import train_args

pytestmark = pytest.mark.sandbox

ROWS = 40
PER_STEP = 4
SEED = 3
STEPS = 3
STEP_2_TURNS = (
    "SELECT count(*) FROM turns JOIN attempts ON attempts.id = attempt_id WHERE method = 'train@2'"
)


@pytest.fixture(scope="module")
def pushed(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The rows' one image, pushed once as swerebenchv2/acme-calc:train."""
    tmp = tmp_path_factory.mktemp("rebench-train-image")
    return push_repo_image(registry, tmp, "/calc", "swerebenchv2/acme-calc", "train", conda=False)


def _log(out: Path) -> list[dict[str, Any]]:
    path = out / "train.jsonl"
    if not path.exists():
        return []
    # a line the run is still writing has no newline yet: only whole lines count
    text = path.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def _turns(out: Path) -> set[tuple[int, int, float]]:
    with contextlib.closing(sqlite3.connect(out / "sprout.db")) as connection:
        return set(connection.execute("SELECT attempt_id, idx, created FROM turns"))


def _step_2_turns(out: Path) -> int | None:
    """Turns committed by step 2's attempts, None while the run's tables are not made."""
    return count(out / "sprout.db", STEP_2_TURNS)


def _args(tmp_path: Path, model: Path, *extra: str) -> list[str]:
    args = train_args(
        tmp_path, model, "--roots", "1", "--tasks-per-step", str(PER_STEP),
        "--data-seed", str(SEED), *extra, steps=STEPS,
    )  # fmt: skip
    args[args.index("--tasks") + 1] = str(tmp_path / "v2.jsonl")
    return args


@pytest.mark.slow
def test_forty_rows_train_four_a_step_and_a_killed_run_resumes_with_the_same_draw(
    pulls_removed_after: Registry,
    pushed: dict[str, str],
    tiny_model_path: Path,
    tmp_path: Path,
) -> None:
    require_overlay()
    rows = [rebench_row(pushed, instance_id=f"acme__calc-{i}") for i in range(ROWS)]
    write_rows(tmp_path / "v2.jsonl", rows)
    loaded = load_tasks([tmp_path / "v2.jsonl"])
    assert loaded.errors == []
    ids = [task.id for task in loaded.tasks]
    assert len(set(ids)) == ROWS
    draw = {step: step_tasks(ids, PER_STEP, SEED, step) for step in range(1, STEPS + 1)}
    out = tmp_path / "run"

    # the first run, killed with its whole process group once step 2 has a turn committed
    command = [sys.executable, "-m", "sprout.cli", *_args(tmp_path, tiny_model_path)]
    with open(tmp_path / "killed.err", "w") as errors:
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True
        )
    try:
        wait_until(lambda: _log(out), process, "step 1's line in train.jsonl")
        wait_until(lambda: _step_2_turns(out) or len(_log(out)) > 1, process, "step 2's turn")
    finally:
        with contextlib.suppress(ProcessLookupError):  # wait_until kills it when it fails
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    killed, turns_killed = _log(out), _turns(out)
    # step 2 was under way (or, on a machine that stalled the test and not the run, had
    # just ended): never all three steps
    assert [line["step"] for line in killed] in ([1], [1, 2]), killed
    assert [line["tasks"] for line in killed] == [draw[s] for s in range(1, len(killed) + 1)]
    assert _step_2_turns(out), "killed in step 2, after its first turn"

    # --resume to the same three steps: every step plays its draw, 4 tasks, 4 groups
    assert main([*_args(tmp_path, tiny_model_path), "--resume"]) == 0
    log = _log(out)
    assert [line["step"] for line in log] == [1, 2, 3]
    assert log[: len(killed)] == killed, "the resume keeps the killed run's lines as they were"
    assert turns_killed <= _turns(out), "every turn committed before the kill is kept"
    for line in log:
        assert line["tasks"] == draw[line["step"]]
        assert line["groups"] == PER_STEP == len(set(line["tasks"]))
    run = RunFolder.open(out)
    try:
        attempts = list(run.tree.attempts())
        for step in range(1, STEPS + 1):
            played = {a.task_id for a in attempts if a.method == f"train@{step}"}
            assert played == set(draw[step]), step
        drawn = {task for tasks in draw.values() for task in tasks}
        assert {a.task_id for a in attempts} == drawn == set(run.tree.task_ids())
        assert len(drawn) == STEPS * PER_STEP  # one epoch is 10 steps: no task twice yet
    finally:
        run.close()

    # 40 rows name the image: it was pulled once, one digest in the image cache
    ours = [
        image
        for image in ImageCache().images()
        if any(name.startswith(f"{pulls_removed_after.host}/") for name in image.names)
    ]
    assert len(ours) == 1 and pushed["image"] in ours[0].names, ours
