"""A run killed with SIGKILL in the middle of a turn resumes from its last committed turn."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sprout.agent import Actor
from sprout.sandbox import LayerStore, Sandbox, SandboxWorkspace
from sprout.tree import RolloutTree
from tests.support.repo_paths import REPO
from tests.support.scripted_model import ScriptedModel, bash, dumps, submit
from tests.support.world import World, make_world

pytestmark = pytest.mark.sandbox


CHILD = """
import os
import sys
sys.path.insert(0, sys.argv[1])
from sprout.agent import Actor
from sprout.sandbox import LayerStore, SandboxWorkspace
from sprout.tree import RolloutTree
from tests.support.scripted_model import ScriptedModel, bash

run, layers, attempt_id = sys.argv[2], sys.argv[3], int(sys.argv[4])
marker = os.environ["SLEEP_MARKER"]  # not in argv: only the sleeping call shows it
model = ScriptedModel(
    [
        bash("echo one >> log"),
        bash("echo two >> log"),
        bash("echo three >> log && echo partial > partial && sleep " + marker),
        bash("echo never >> log"),
    ]
)
tree = RolloutTree(run + "/sprout.db")
Actor(model, tree, SandboxWorkspace(LayerStore(layers))).run(attempt_id)
"""

LOGS = {1: "one\n", 2: "one\ntwo\n", 3: "one\ntwo\nthree-again\n", 4: "one\ntwo\nthree-again\n"}
"""The log at each checkpoint of the resumed attempt (turn 4 only submits)."""


def unsealed_layers(layers: LayerStore) -> set[str]:
    root = Path(layers.path)
    return {p.name for p in (root / "l").iterdir()} - {p.stem for p in (root / "m").iterdir()}


def partial_layers(layers: LayerStore) -> set[str]:
    """Unsealed layers holding the interrupted turn's `partial` file."""
    root = Path(layers.path) / "l"
    return {i for i in unsealed_layers(layers) if (root / i / "workspace" / "partial").exists()}


def wait_for(condition, what: str, child: subprocess.Popen, errors: Path) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        if child.poll() is not None:
            pytest.fail(
                f"the actor process exited ({child.returncode}) before {what}: {errors.read_text()}"
            )
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_killed_run_resumes_from_its_last_turn(overlay_store, tmp_path, procs, marker):
    world: World = make_world(overlay_store, tmp_path)
    attempt = world.root(world.actor(ScriptedModel([])))  # the actor only lends its prompts
    errors = tmp_path / "child.err"
    with errors.open("w") as stderr:
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD,
                str(REPO),
                str(tmp_path),
                overlay_store.path,
                str(attempt.id),
            ],
            env={**os.environ, "SLEEP_MARKER": marker},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        # the test's own tree reads what the child commits, turn by turn
        wait_for(lambda: len(world.tree.own_turns(attempt)) == 2, "two turns", child, errors)
        # turn 3 has written its partial file (in its unsealed layer) and is sleeping
        wait_for(lambda: partial_layers(overlay_store), "the partial write", child, errors)
        wait_for(lambda: procs.matching(marker), "the sleeping call", child, errors)
        assert len(world.tree.own_turns(attempt)) == 2
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert procs.survivors(marker) == [], "the sleeping call outlived the process that ran it"
    interrupted = partial_layers(overlay_store)
    assert len(interrupted) == 1
    world.tree.close()

    # resume in this process, on fresh handles to the same files
    tree = RolloutTree(tmp_path / "sprout.db")
    layers = LayerStore(overlay_store.path)
    stored = tree.attempt(attempt.id)
    assert stored.status == "running"
    assert [t.index for t in tree.own_turns(stored)] == [1, 2]
    context_at_2 = tree.messages(stored, 2)

    resumed_turn = bash("echo three-again >> log && cat log && ls")
    model = ScriptedModel([resumed_turn, submit()])
    done = Actor(model, tree, SandboxWorkspace(layers)).run(stored)

    assert done.status == "submitted"
    assert dumps(model.seen[0]) == dumps(context_at_2), "resumed from turn 2's context"
    turns = tree.own_turns(done)
    assert [t.index for t in turns] == [1, 2, 3, 4]
    assert turns[2].text == resumed_turn
    third = turns[2].calls[0].output
    assert third == "one\ntwo\nthree-again\nlog\n", "finished turns once each; no partial writes"
    # every model call is on record, the lost turn's too: it was spent
    calls = tree.model_calls(attempt_id=attempt.id)
    assert [call.turn_index for call in calls] == [1, 2, 3, 3, 4]

    # GC frees the interrupted turn's layer and keeps every referenced checkpoint forkable
    keep = tree.checkpoints()
    assert keep >= {world.base, *(t.checkpoint for t in turns)}
    freed = layers.gc(keep=keep)
    assert freed > 0
    assert not (interrupted & unsealed_layers(layers))
    for layer in interrupted:
        assert not (Path(layers.path) / "l" / layer).exists()
    expected = {world.base: ""}
    expected.update({t.checkpoint: LOGS[t.index] for t in turns})
    for checkpoint, log in expected.items():
        with Sandbox.fork(layers, checkpoint) as sandbox:
            assert sandbox.run("cat log 2>/dev/null; true").output == log
    assert os.listdir(Path(layers.path) / "h") == []
