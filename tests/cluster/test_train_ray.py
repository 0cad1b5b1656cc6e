"""`sprout train --ray` on a real Ray cluster (a head and two one-core workers on this
machine, `ray.cluster_utils.Cluster`): the rollouts' sandboxes run on the workers while
the learner and the rollout model stay in the driver; and the --ray options that
`sprout run` and `sprout train` share refuse the same mistakes with the same lines.

The cluster runs are `sprout` processes of their own, as a user would start them, with
the tiny model the training tests use and a task whose verifier tosses a coin.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout.cli import main
from sprout.runfolder import RunFolder
from tests.support.ray_runs import placements, sealed_in
from tests.support.repo_paths import SPROUT
from tests.support.taskfolders import two_edits_task
from tests.support.train_command import COIN
from tests.support.train_command import train_args as small_train_args

pytest.importorskip("ray.cluster_utils", reason="--ray needs Ray: pip install 'sprout-rl[dist]'")

TRAIN_TIMEOUT_S = 300


def train_args(tmp_path: Path, model: Path, steps: int, *extra: str) -> list[str]:
    """The training tests' small `sprout train` (2 roots, 1 child each, 2 turns), two
    rollouts at a time: one a worker node's core."""
    return small_train_args(tmp_path, model, "--workers", "2", *extra, steps=steps)


def train_on(cluster: Any, tmp_path: Path, model: Path, steps: int, *extra: str) -> str:
    """`sprout train` on `cluster`, each node's store under TMP/stores; its output."""
    args = train_args(tmp_path, model, steps, *extra)
    args += ["--ray", cluster.address, "--ray-store", f"{tmp_path}/stores/{{node}}"]
    try:
        done = subprocess.run(
            [str(SPROUT), *args], capture_output=True, text=True, timeout=TRAIN_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"sprout train outlived {TRAIN_TIMEOUT_S} s: {expired.stdout!r}")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done.stdout


def steps_logged(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]


def checkpoints_by_method(out: Path) -> dict[str, set[str]]:
    """Per step's method: the checkpoints its rollouts' turns ended on."""
    run = RunFolder.open(out)
    try:
        found: dict[str, set[str]] = {}
        for attempt in run.tree.attempts("coin"):
            turns = run.tree.own_turns(attempt)
            found.setdefault(attempt.method, set()).update(t.checkpoint for t in turns)
        return found
    finally:
        run.close()


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_each_step_rolls_out_on_the_workers_and_a_resume_goes_on_there(
    shared_cluster: Any, tmp_path: Path, tiny_model_path: Path
) -> None:
    task = two_edits_task(tmp_path / "tasks", "coin")
    (task / "tests" / "test.sh").write_text(COIN)
    out = tmp_path / "run"
    train_on(shared_cluster, tmp_path, tiny_model_path, 2)

    log = steps_logged(out)
    assert [entry["step"] for entry in log] == [1, 2]
    assert all((Path(entry["policy"]) / "config.json").is_file() for entry in log)
    first = placements(out)
    workers = {node.node_id for node in shared_cluster.worker_nodes}
    assert [p["why"] for p in first] == ["placed", "placed"], "a new actor per step"
    assert {p["task"] for p in first} == {"coin"} and {p["node"] for p in first} <= workers

    train_on(shared_cluster, tmp_path, tiny_model_path, 3, "--resume")
    assert [entry["step"] for entry in steps_logged(out)] == [1, 2, 3]
    assert (out / "policy" / "step-3" / "config.json").is_file()
    placed = placements(out)
    assert placed[:2] == first, "a resumed run keeps the placements of the steps before"
    assert len(placed) == 3 and placed[2]["node"] in workers

    by_method = checkpoints_by_method(out)
    assert sorted(by_method) == ["train@1", "train@2", "train@3"]
    for placement, method in zip(placed, sorted(by_method), strict=True):
        assert by_method[method], f"{method}: no turn played"
        for checkpoint in by_method[method]:
            assert sealed_in(placement["store"], checkpoint), (method, checkpoint)
    layers = out / "layers" / "l"
    assert not layers.exists() or not list(layers.iterdir()), "no sandbox in the run folder"
    refused_resume_leaves_the_cluster(shared_cluster, tmp_path, tiny_model_path)


def refused_resume_leaves_the_cluster(cluster: Any, tmp_path: Path, model: Path) -> None:
    """A resume refused on the cluster (other settings) is exit 2 and leaves the cluster."""
    import ray

    args = train_args(tmp_path, model, 3, "--resume", "--lr", "5e-4")
    assert main([*args, "--ray", cluster.address]) == 2
    assert not ray.is_initialized(), "the driver left the cluster"


@pytest.mark.parametrize("command", ["run", "train"])
@pytest.mark.parametrize(
    ("options", "line"),
    [
        (["--ray-store", "s/{node}"], "--ray-store: only with --ray"),
        (["--ray", "local", "--ray-store", "s"], "--ray-store s: needs {node} in it"),
        (["--ray", "local", "--ray-cpus", "0"], "--ray-cpus: expected a number of cores above 0"),
        (["--ray", "no-port-here"], "--ray no-port-here: cannot join the cluster: "),
        (["--ray-memory", "8G"], "--ray-memory: only with --ray"),
        (["--ray", "local", "--ray-memory", "lots"], "--ray-memory lots: expected a size"),
        (["--ray", "local", "--ray-memory=-1G"], "--ray-memory -1G: Input should be greater"),
        (["--ray", "local", "--ray-memory", "inf"], "--ray-memory inf: Input should be a finite"),
    ],
)
def test_both_commands_refuse_a_bad_ray_option_alike(
    command: str,
    options: list[str],
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "run"
    assert main([*command_args(command, tmp_path), *options]) == 2
    (said,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert said.startswith(f"sprout {command}: {line}"), said
    assert not out.exists(), "refused before the run folder was made"


@pytest.mark.parametrize("command", ["run", "train"])
def test_both_commands_say_ray_is_missing_alike(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As on a machine without the `dist` extra: the module finder knows no `ray`."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a)
    )
    assert main([*command_args(command, tmp_path), "--ray"]) == 2
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert said == f"sprout {command}: --ray: Ray is not installed; pip install 'sprout-rl[dist]'"
    assert not (tmp_path / "run").exists()


def command_args(command: str, tmp_path: Path) -> list[str]:
    """`sprout run` or `sprout train` on one task into TMP/run, with nothing of --ray yet."""
    two_edits_task(tmp_path / "tasks", "coin")
    if command == "train":
        return train_args(tmp_path, tmp_path / "no-model-needed", 1)
    return ["run", str(tmp_path / "tasks"), "--model", "oracle", "--out", str(tmp_path / "run")]
