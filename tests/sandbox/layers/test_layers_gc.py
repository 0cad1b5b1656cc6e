"""The layer store: reference counts, squashing, and GC that never loses a kept checkpoint."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox, UnknownCheckpoint
from sprout.sandbox.layers.gc import StoreInUse


def build_tree(layers: LayerStore) -> dict[str, str]:
    """base -> first -> {left, right}, each layer holding one file; all sandboxes closed."""
    ids: dict[str, str] = {}
    with Sandbox.create(layers) as sandbox:
        ids["base"] = sandbox.parent
        sandbox.run("echo first > first")
        ids["first"] = sandbox.checkpoint()
    for side in ("left", "right"):
        with Sandbox.fork(layers, ids["first"]) as fork:
            fork.run(f"head -c 100000 /dev/zero > {side}")
            ids[side] = fork.checkpoint()
    return ids


def refcounts(layers: LayerStore) -> dict[str, int]:
    return {layer.id: layer.refcount for layer in layers.layers()}


def test_refcount_counts_children_and_open_sandboxes(layers):
    ids = build_tree(layers)
    counts = refcounts(layers)
    assert counts[ids["base"]] == 1
    assert counts[ids["first"]] == 2
    assert counts[ids["left"]] == 0
    assert counts[ids["right"]] == 0
    with Sandbox.fork(layers, ids["left"]), Sandbox.fork(layers, ids["left"]):
        assert refcounts(layers)[ids["left"]] == 2
    assert refcounts(layers)[ids["left"]] == 0


def test_layers_report_size_and_depth(layers):
    ids = build_tree(layers)
    by_id = {layer.id: layer for layer in layers.layers()}
    assert set(by_id) == set(ids.values())
    assert by_id[ids["left"]].size >= 100_000
    assert by_id[ids["first"]].size < 100_000
    assert [by_id[ids[name]].depth for name in ("base", "first", "left")] == [1, 2, 3]
    assert by_id[ids["left"]].parent == ids["first"]


def test_gc_frees_unreferenced_layers_and_keeps_ancestors(layers):
    ids = build_tree(layers)
    freed = layers.gc(keep=[ids["left"]])
    assert freed >= 100_000
    assert not os.path.exists(layers.diff_dir(ids["right"]))
    with pytest.raises(UnknownCheckpoint):
        layers.layer(ids["right"])
    with pytest.raises(UnknownCheckpoint):
        Sandbox.fork(layers, ids["right"])
    assert {layer.id for layer in layers.layers()} == {ids["base"], ids["first"], ids["left"]}
    with Sandbox.fork(layers, ids["left"]) as fork:
        assert fork.run("ls").output == "first\nleft\n"
        assert [c.path for c in fork.changes(since=ids["base"])] == [
            "/workspace/first",
            "/workspace/left",
        ]
    assert layers.gc(keep=[ids["left"]]) == 0, "a second GC found more to free"


def test_gc_keeps_what_open_sandboxes_stand_on(layers):
    ids = build_tree(layers)
    with Sandbox.fork(layers, ids["right"]) as open_fork:
        open_fork.run("echo unsaved > unsaved")
        layers.gc(keep=[])
        assert {layer.id for layer in layers.layers()} == {ids["base"], ids["first"], ids["right"]}
        assert open_fork.run("ls").output == "first\nright\nunsaved\n"
        kept = open_fork.checkpoint()
    assert layers.gc(keep=[]) > 0
    assert layers.layers() == []
    with pytest.raises(UnknownCheckpoint):
        Sandbox.fork(layers, kept)
    assert os.listdir(os.path.join(layers.path, "l")) == []


def test_gc_of_an_unknown_keep_id_fails_before_freeing_anything(layers):
    ids = build_tree(layers)
    with pytest.raises(UnknownCheckpoint, match="0123456789"):
        layers.gc(keep=[ids["left"], "0123456789"])
    assert {layer.id for layer in layers.layers()} == set(ids.values())


def test_closed_sandboxes_leave_no_scratch(layers):
    build_tree(layers)
    assert os.listdir(os.path.join(layers.path, "w")) == []
    assert os.listdir(os.path.join(layers.path, "h")) == []


def test_squashing_keeps_every_checkpoint_exact(layers, tmp_path):
    squashing = LayerStore(tmp_path / "squashing", mode=layers.mode, max_stack=3)
    ids = []
    with Sandbox.create(squashing) as sandbox:
        for command in [
            "echo 1 > a && mkdir d && echo x > d/x",
            "echo 2 > b",
            "rm a",
            "rm -r d && mkdir d && echo y > d/y",
            "echo 3 > c && ln -s c link",
            "rm b link",
            "echo 4 > a",
        ]:
            sandbox.run(command)
            ids.append(sandbox.checkpoint())
        assert sandbox.run("ls; ls d").output == "a\nc\nd\ny\n"
    assert any(layer.flat for layer in squashing.layers()), "max_stack=3 should have squashed"
    assert all(len(squashing.stack(i)) <= 3 for i in ids)
    expected = [
        "a\nd\nx\n",
        "a\nb\nd\nx\n",
        "b\nd\nx\n",
        "b\nd\ny\n",
        "b\nc\nd\nlink\ny\n",
        "c\nd\ny\n",
        "a\nc\nd\ny\n",
    ]
    for checkpoint, listing in zip(ids, expected, strict=True):
        with Sandbox.fork(squashing, checkpoint) as fork:
            observation = fork.run("ls; ls d")
            assert (observation.output, observation.exit_code) == (listing, 0), checkpoint
    squashing.gc(keep=[ids[-1]])
    for checkpoint, listing in zip(ids, expected, strict=True):
        with Sandbox.fork(squashing, checkpoint) as fork:
            assert fork.run("ls; ls d").output == listing, checkpoint


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def plant_debris(layers: LayerStore, pid: int, parent: str | None) -> str:
    """What a process `pid` killed mid-verify leaves: an unsealed layer holding the hidden
    tests and the verifier's logs, its scratch and its hold."""
    layer_id = secrets.token_hex(5)
    hold = {"pid": pid, "start": "1", "parent": parent}
    Path(layers.path, "h", layer_id).write_text(json.dumps(hold))
    (Path(layers.diff_dir(layer_id)) / "tests").mkdir(parents=True)
    (Path(layers.diff_dir(layer_id)) / "tests" / "test_hidden.py").write_text("x" * 50_000)
    (Path(layers.scratch_dir(layer_id)) / "w").mkdir(parents=True)
    return layer_id


def test_sweep_removes_what_dead_owners_left_and_nothing_of_a_live_one(layers):
    ids = build_tree(layers)
    debris = plant_debris(layers, dead_pid(), ids["left"])
    with Sandbox.fork(layers, ids["right"]) as live:
        live.run("echo unsaved > unsaved")
        swept = layers.sweep()
        assert swept.debris == [debris] and swept.bytes_freed >= 50_000
        assert not os.path.lexists(layers.diff_dir(debris))
        assert not os.path.lexists(layers.scratch_dir(debris))
        assert not os.path.lexists(os.path.join(layers.path, "h", debris))
        assert live.run("cat unsaved").output == "unsaved\n", "the live sandbox's layer stays"
        assert {layer.id for layer in layers.layers()} == set(ids.values()), "sealed stay"
    assert layers.sweep().debris == []


def test_a_dry_collect_frees_nothing_and_says_what_would_go(layers):
    ids = build_tree(layers)
    debris = plant_debris(layers, dead_pid(), None)
    before = sorted(os.listdir(os.path.join(layers.path, "l")))
    dry = layers.collect(keep=[ids["left"]], dry_run=True)
    assert dry.layers == [ids["right"]] and dry.debris == [debris]
    assert dry.bytes_freed >= 150_000 and dry.kept == 3
    assert sorted(os.listdir(os.path.join(layers.path, "l"))) == before
    done = layers.collect(keep=[ids["left"]])
    assert (done.layers, done.debris, done.bytes_freed) == (dry.layers, dry.debris, dry.bytes_freed)
    assert sorted(os.listdir(os.path.join(layers.path, "l"))) == sorted(
        [ids["base"], ids["first"], ids["left"]]
    )


def test_references_keep_their_stacks_and_missing_ones_are_reported(layers):
    ids = build_tree(layers)
    freed = layers.collect(references=lambda: {ids["right"], "0123456789"})
    assert freed.layers == [ids["left"]] and freed.missing == ["0123456789"]
    with Sandbox.fork(layers, ids["right"]) as fork:
        assert fork.run("ls").output == "first\nright\n"


CLAIM = """
import sys, time
from sprout.sandbox import LayerStore
store = LayerStore(sys.argv[1])
store.claim()
print("claimed", flush=True)
time.sleep(60)
"""


def test_gc_refuses_while_another_process_claims_the_store(layers):
    ids = build_tree(layers)
    holder = subprocess.Popen(
        [sys.executable, "-c", CLAIM, layers.path], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "claimed\n"
        with pytest.raises(StoreInUse, match=f"process {holder.pid}"):
            layers.gc(keep=[])
        assert {layer.id for layer in layers.layers()} == set(ids.values()), "nothing freed"
        own = LayerStore(layers.path)
        own.claim()  # claimed here too: the other process's claim still stops GC
        try:
            with pytest.raises(StoreInUse):
                own.gc(keep=[ids["left"]])
        finally:
            own.release()
    finally:
        holder.kill()
        holder.wait()
    mine = LayerStore(layers.path)
    mine.claim()
    try:
        assert mine.gc(keep=[ids["left"]]) >= 100_000, "only this process holds it now"
    finally:
        mine.release()
