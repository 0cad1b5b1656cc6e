"""The overlay sandbox for an unprivileged user, in a user namespace, over a directory image.

The tests run as root and switch to `nobody` for a small script that prints
what it saw as JSON. The image is a minimal root filesystem directory: an
overlay of the host's root cannot be mounted from a user namespace.
"""

from __future__ import annotations

import os

import pytest

from sprout.sandbox import LayerStore, StoreModeMismatch
from tests.support.nobody import NOBODY, run_in_image, run_script

pytestmark = pytest.mark.sandbox

PRELUDE = r"""
import json, os, sys, time
from sprout.sandbox import LayerStore, Sandbox

image, path, marker = sys.argv[1:4]
out = {}

def run(sandbox, command):
    observation = sandbox.run(command, timeout=30)
    return [observation.output, observation.exit_code]

def look(store, checkpoint, command):
    with Sandbox.fork(store, checkpoint) as fork:
        return run(fork, command)
"""

CORE = (
    PRELUDE
    + r"""
store = LayerStore(path)
out["mode"] = store.mode
with Sandbox.create(store, image=image) as sandbox:
    out["root"] = run(sandbox, "ls /")
    out["dev"] = run(sandbox, "ls -A /dev")
    out["write"] = run(
        sandbox,
        "echo hello > a && mkdir d && echo x > d/x && echo gone > gone && echo img > /etc/added",
    )
    c1 = sandbox.checkpoint()
    out["delete"] = run(sandbox, "rm gone /etc/hostname && mv d e && ls")
    out["changes"] = [[c.path, c.kind] for c in sandbox.changes()]
    c2 = sandbox.checkpoint()
    started = time.monotonic()
    out["background"] = run(sandbox, f"sleep {marker} & echo started")
    out["background_s"] = time.monotonic() - started
    timed = sandbox.run(f"sleep {marker} & sleep {marker}", timeout=1)
    out["timeout"] = [timed.timed_out, timed.exit_code]
with Sandbox.fork(store, c1) as a, Sandbox.fork(store, c1) as b:
    a.run("echo a > only_a")
    b.run("echo b > only_b && rm a")
    out["fork_a"] = run(a, "ls")
    out["fork_b"] = run(b, "ls")
    fork_b = b.checkpoint()
out["c1"] = look(store, c1, "ls; ls d; cat /etc/hostname /etc/added")
out["c2"] = look(store, c2, "ls; ls e; ls /etc")
out["freed"] = store.gc(keep=[c2])
out["layers"] = sorted(layer.id for layer in store.layers())
out["ids"] = {"c1": c1, "c2": c2, "fork_b": fork_b}
out["c2_after_gc"] = look(store, c2, "ls")
print(json.dumps(out))
"""
)

SQUASH = (
    PRELUDE
    + r"""
store = LayerStore(path, max_stack=3)
ids = []
with Sandbox.create(store, image=image) as sandbox:
    for command in ["echo 1 > a && mkdir d && echo x > d/x", "echo 2 > b", "rm a && rm -r d"]:
        sandbox.run(command)
        ids.append(sandbox.checkpoint())
    for turn in range(3):
        sandbox.run(f"echo {turn} > n{turn}")
        ids.append(sandbox.checkpoint())
out["squashed"] = any(layer.flat for layer in store.layers())
out["listings"] = [look(store, checkpoint, "ls") for checkpoint in ids]
print(json.dumps(out))
"""
)

SCRATCH = (
    PRELUDE
    + r"""
store = LayerStore(path)
with Sandbox.create(store, image=image) as sandbox:
    sandbox.run("echo 1 > a")
    first = sandbox.checkpoint()
    sandbox.run("echo 2 > b")
    sandbox.checkpoint()
out["fork"] = look(store, first, "ls")
store.gc(keep=[first])
out["scratch"] = sorted(os.listdir(os.path.join(path, "w")))
print(json.dumps(out))
"""
)

OPEN = r"""
import sys
from sprout.sandbox import LayerStore, StoreModeMismatch
try:
    print(LayerStore(sys.argv[1]).mode)
except StoreModeMismatch as error:
    print("StoreModeMismatch:", error)
"""


def test_unprivileged_store_is_rootless_and_refused_to_root(nobody_env, nobody_dir):
    store_path = nobody_dir / "store"
    assert run_script(OPEN, [str(store_path)], nobody_env) == "rootless\n"
    assert os.stat(store_path / "store.json").st_uid == NOBODY
    with pytest.raises(StoreModeMismatch, match="rootless"):
        LayerStore(store_path)
    with pytest.raises(StoreModeMismatch, match="rootless"):
        LayerStore(store_path, mode="root")


def test_root_store_is_refused_to_an_unprivileged_user(nobody_env, nobody_dir):
    store_path = nobody_dir / "root-store"
    assert LayerStore(store_path, place=False).mode == "root"  # where nobody can reach it
    output = run_script(OPEN, [str(store_path)], nobody_env)
    assert output.startswith("StoreModeMismatch:")
    assert "root mode" in output


def test_core_cases_as_an_unprivileged_user(nobody_env, nobody_dir, own_image, procs, marker):
    image_etc = sorted(os.listdir(own_image / "etc"))
    out = run_in_image(CORE, own_image, nobody_dir, marker, nobody_env)

    assert out["mode"] == "rootless"
    assert set(out["root"][0].split()) >= {"bin", "etc", "dev", "proc", "workspace"}
    assert set(out["dev"][0].split()) == {
        "null", "zero", "full", "random", "urandom", "tty",
        "pts", "shm", "ptmx", "fd", "stdin", "stdout", "stderr",
    }  # fmt: skip
    assert out["write"] == ["", 0]
    assert out["delete"] == ["a\ne\n", 0]
    assert ["/workspace/gone", "deleted"] in out["changes"]
    assert ["/workspace/d", "deleted"] in out["changes"]
    assert ["/workspace/e/x", "added"] in out["changes"]
    assert ["/etc/hostname", "deleted"] in out["changes"]
    assert out["background"] == ["started\n", 0]
    assert out["background_s"] < 20, "it waited for its background child (or a 30 s timeout)"
    assert out["timeout"] == [True, None]
    assert procs.survivors(marker) == []

    assert out["fork_a"] == ["a\nd\ngone\nonly_a\n", 0]
    assert out["fork_b"] == ["d\ngone\nonly_b\n", 0]
    assert out["c1"] == ["a\nd\ngone\nx\nimage\nimg\n", 0]
    assert out["c2"] == ["a\ne\nx\nadded\n", 0]
    assert out["freed"] > 0, "the fork's sealed layer was not freed"
    assert out["ids"]["fork_b"] not in out["layers"]
    assert {out["ids"]["c1"], out["ids"]["c2"]} <= set(out["layers"])
    assert out["c2_after_gc"] == ["a\ne\n", 0]

    # the image is read-only underneath; the layers belong to the unprivileged user
    assert sorted(os.listdir(own_image / "etc")) == image_etc
    assert (own_image / "etc/hostname").read_text() == "image\n"
    assert os.stat(nobody_dir / "store" / "l" / out["ids"]["c2"]).st_uid == NOBODY


def test_squashing_as_an_unprivileged_user(nobody_env, nobody_dir, own_image, marker):
    out = run_in_image(SQUASH, own_image, nobody_dir, marker, nobody_env)
    assert out["squashed"]
    assert out["listings"] == [
        ["a\nd\n", 0],
        ["a\nb\nd\n", 0],
        ["b\n", 0],
        ["b\nn0\n", 0],
        ["b\nn0\nn1\n", 0],
        ["b\nn0\nn1\nn2\n", 0],
    ]


def test_unprivileged_sandboxes_leave_no_scratch(nobody_env, nobody_dir, own_image, marker):
    out = run_in_image(SCRATCH, own_image, nobody_dir, marker, nobody_env)
    assert out["fork"] == ["a\n", 0]
    assert out["scratch"] == [], "closed sandboxes left scratch directories behind"
