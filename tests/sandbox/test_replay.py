"""Rebuilding lost checkpoints from their recorded calls (`sprout.sandbox.replay`): a
second store, empty but for its own checkpoint 0, gets the lost ids back with the files
they held, or stops at the first call that exits otherwise than recorded."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sprout.sandbox import BadArgument, LayerStore, Sandbox
from sprout.sandbox.replay import ReplayCall, ReplayTurn, rebuild, sealed_in
from tests.support.file_tree import tree_snapshot

TURNS = [
    ["echo one > a", "mkdir d && echo two > d/b"],
    ["cat a", "false || echo failed"],  # writes nothing: seals no layer
    ["rm a && echo three > d/c", "exit 3"],
]


def record(store: LayerStore) -> tuple[str, list[ReplayTurn], dict[str, bytes | str]]:
    """Checkpoint 0 of `store`, the turns played over it as the tree records them, and the
    files the last one's sandbox sees."""
    with Sandbox.create(store) as sandbox:
        base = sandbox.parent
        turns = []
        for commands in TURNS:
            calls = []
            for command in commands:
                seen = sandbox.run(command, timeout=30)
                calls.append(ReplayCall(command, seen.exit_code, seen.timed_out, seen.output))
            turns.append(ReplayTurn(sandbox.checkpoint(), tuple(calls)))
        files = tree_snapshot_of(sandbox)
    return base, turns, files


def tree_snapshot_of(sandbox: Sandbox) -> dict[str, bytes | str]:
    listed = sandbox.run("find /workspace | sort && cat /workspace/d/*", timeout=30)
    return {"listing": listed.output}


@pytest.fixture
def stores(tmp_path: Path, layers: LayerStore) -> tuple[LayerStore, LayerStore]:
    """The store that is lost, and the next node's (of the same kind)."""
    return layers, LayerStore(tmp_path / "next", mode=layers.mode)


def test_lost_checkpoints_come_back_under_their_ids_with_their_files(stores):
    lost, store = stores
    old_base, turns, seen = record(lost)
    with Sandbox.create(store) as sandbox:
        base = sandbox.parent

    rebuilt = rebuild(store, base, old_base, turns, 30, sealed_in(store))

    assert (rebuilt.calls, rebuilt.differed, rebuilt.diverged) == (4, 0, None)
    assert "running 4 recorded calls again" in rebuilt.describe()
    last = turns[-1].checkpoint
    assert store.ancestry(last) == [last, turns[0].checkpoint, old_base, base]
    assert store.layer(old_base).size == 0, "the lost checkpoint 0: an empty layer over ours"
    for turn in (turns[0], turns[-1]):
        assert tree_snapshot(store.diff_dir(turn.checkpoint)) == tree_snapshot(
            lost.diff_dir(turn.checkpoint)
        )
    with Sandbox.fork(store, last) as sandbox:
        assert tree_snapshot_of(sandbox) == seen


def test_a_rebuild_starts_from_the_deepest_checkpoint_the_store_can_get(stores):
    lost, store = stores
    old_base, turns, _ = record(lost)
    with Sandbox.create(store) as sandbox:
        base = sandbox.parent
    assert rebuild(store, base, old_base, turns[:1], 30, sealed_in(store)).diverged is None

    rebuilt = rebuild(store, base, old_base, turns, 30, sealed_in(store))

    assert (rebuilt.calls, rebuilt.diverged) == (2, None), "the last turn's calls only"


def test_a_call_that_exits_otherwise_stops_the_rebuild_there(stores):
    lost, store = stores
    old_base, turns, _ = record(lost)
    with Sandbox.create(store) as sandbox:
        base = sandbox.parent
    wrong = dataclasses.replace(turns[2].calls[1], exit_code=0)
    turns[2] = dataclasses.replace(turns[2], calls=(turns[2].calls[0], wrong))

    rebuilt = rebuild(store, base, old_base, turns, 30, sealed_in(store))

    assert rebuilt.diverged == "turn 3: `exit 3` exited 3, recorded as exited 0"
    assert sealed_in(store)(turns[0].checkpoint) and not sealed_in(store)(turns[2].checkpoint)
    assert rebuilt.describe().startswith("could not be rebuilt: turn 3")


def test_output_that_differs_is_counted_not_hidden(stores):
    lost, store = stores
    old_base, turns, _ = record(lost)
    with Sandbox.create(store) as sandbox:
        base = sandbox.parent
    said = dataclasses.replace(turns[0].calls[0], output="something else\n")
    turns[0] = dataclasses.replace(turns[0], calls=(said, turns[0].calls[1]))

    rebuilt = rebuild(store, base, old_base, turns, 30, sealed_in(store))

    assert (rebuilt.differed, rebuilt.diverged) == (1, None)
    assert rebuilt.describe().endswith("; 1 printed otherwise")


def test_a_layer_id_the_store_has_cannot_be_given_to_a_new_one(layers):
    with Sandbox.create(layers) as sandbox:
        base = sandbox.parent
    with pytest.raises(BadArgument, match=f"{base}: already a layer"):
        Sandbox.fork(layers, base, upper=base)
