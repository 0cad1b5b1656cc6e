"""A checkpoint survives the process that made it being killed mid-turn, and `checkpoint()`
returns once the layer is sealed, its flush to disk running after."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from unittest import mock

import pytest

from sprout.durable import syncfs
from sprout.sandbox import LayerStore, Sandbox, SandboxError, UnknownCheckpoint
from sprout.sandbox.layers import flusher
from sprout.sandbox.layers import store as store_module

pytestmark = pytest.mark.sandbox

WRITER = """
import sys
from sprout.sandbox import LayerStore, Sandbox

store = LayerStore(sys.argv[1])
sandbox = Sandbox.create(store)
sandbox.run("echo kept > kept && mkdir dir && echo inner > dir/inner")
print(sandbox.checkpoint(), sandbox.upper, flush=True)
# a long turn: writes for a while, then waits to be killed
sandbox.run(
    "for i in $(seq 1 20000); do echo line$i >> big; done; echo written > written; "
    "sleep " + sys.argv[2],
    timeout=300,
)
"""


def start_writer(store_path: Path, marker: str) -> tuple[subprocess.Popen[str], str, str]:
    """The writer process, the checkpoint it sealed, and the unsealed layer it is writing."""
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store_path), marker],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait()
        pytest.fail(f"the writer died before its checkpoint: {process.stderr.read()}")
    checkpoint, upper = line.split()
    big = store_path / "l" / upper / "workspace" / "big"
    deadline = time.monotonic() + 30
    while not (big.exists() and big.stat().st_size > 1000):
        assert time.monotonic() < deadline, "the long write never started"
        time.sleep(0.01)
    return process, checkpoint, upper


def kill(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stdout.close()
    process.stderr.close()


def test_checkpoint_survives_kill_9_mid_turn(overlay_available, tmp_path, procs, marker):
    if os.geteuid() != 0:
        pytest.skip("the writer uses the host image, which needs root")
    store_path = tmp_path / "store"
    process, checkpoint, upper = start_writer(store_path, marker)
    kill(process)
    # the orphaned call must not write on while we look (test_killed_caller_leaves_no_call_running)
    procs.matching(marker)
    procs.kill_all()
    assert procs.survivors(marker) == []

    store = LayerStore(store_path)
    assert (store_path / "l" / upper).exists(), "the unsealed layer is still on disk"
    assert upper not in {layer.id for layer in store.layers()}
    with pytest.raises(UnknownCheckpoint):
        store.layer(upper)
    with Sandbox.fork(store, checkpoint) as fork:
        assert fork.run("cat kept dir/inner; ls").output == "kept\ninner\ndir\nkept\n"

    freed = store.gc(keep=[checkpoint])
    assert freed > 0, "the killed turn's unsealed layer was not freed"
    assert not (store_path / "l" / upper).exists()
    assert not (store_path / "w" / upper).exists()
    assert os.listdir(store_path / "h") == []
    with Sandbox.fork(store, checkpoint) as fork:
        assert fork.run("ls").output == "dir\nkept\n"


def test_killed_caller_leaves_no_call_running(overlay_available, tmp_path, procs, marker):
    """No process outlives its call, even when the caller dies: otherwise the orphaned call
    keeps writing into a layer that gc() (seeing a dead holder) deletes under it."""
    if os.geteuid() != 0:
        pytest.skip("the writer uses the host image, which needs root")
    process, _, _ = start_writer(tmp_path / "store", marker)
    kill(process)
    assert procs.survivors(marker) == [], (
        "the call's processes (sprout-box and its command) outlived the killed caller"
    )


def test_checkpoint_returns_sealed_and_its_flush_runs_after(
    overlay_store: LayerStore, monkeypatch: pytest.MonkeyPatch
):
    flushing, release = threading.Event(), threading.Event()

    def held(fd: int) -> bool:
        flushing.set()
        assert release.wait(60), "the test never let the flush go"
        return syncfs(fd)

    monkeypatch.setattr(flusher, "syncfs", held)
    try:
        with Sandbox.create(overlay_store) as sandbox:
            sandbox.run("echo kept > kept")
            checkpoint = sandbox.checkpoint()  # returns, while the flush waits
            assert flushing.wait(60), "the layer was never handed to the flusher"
            assert not overlay_store.wait_durable(checkpoint, timeout=0.1)
            with Sandbox.fork(overlay_store, checkpoint) as fork:  # sealed: it opens already
                assert fork.run("cat kept").output == "kept\n"
            waiting = threading.Thread(target=overlay_store.wait_durable, args=(checkpoint,))
            waiting.start()
            waiting.join(0.2)
            assert waiting.is_alive(), "wait_durable returned before the flush"
            release.set()
            waiting.join(60)
            assert not waiting.is_alive()
            assert overlay_store.wait_durable(checkpoint, timeout=0)
    finally:
        release.set()


def checkpoint_with_a_full_disk_at(
    sandbox: Sandbox, owner: object, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sandbox.checkpoint()` while `owner.step` fails with ENOSPC (the step works again
    afterwards, however the checkpoint ends)."""
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(owner, step, mock.Mock(side_effect=full))
    try:
        sandbox.checkpoint()
    finally:
        monkeypatch.undo()


def test_a_sandbox_that_cannot_start_its_next_layer_closes_and_its_checkpoint_stays_whole(
    overlay_store: LayerStore, monkeypatch: pytest.MonkeyPatch
):
    with Sandbox.create(overlay_store) as sandbox:
        sandbox.run("echo kept > kept")
        with pytest.raises(SandboxError, match=r"starting the layer over checkpoint .*: No space"):
            checkpoint_with_a_full_disk_at(sandbox, overlay_store, "new_layer", monkeypatch)
        checkpoint = sandbox.parent
        assert sandbox.closed
        with pytest.raises(SandboxError, match="closed"):
            sandbox.run("echo lost > kept")  # no call writes the sealed layer
    assert overlay_store.wait_durable(checkpoint, timeout=60), "the sealed layer was not flushed"
    with Sandbox.fork(overlay_store, checkpoint) as fork:
        assert fork.run("cat kept").output == "kept\n"
    assert not os.listdir(os.path.join(overlay_store.path, "h")), "a hold was left behind"


def test_a_squash_that_fails_leaves_the_turn_unsealed_and_the_sandbox_going_on(
    overlay_store: LayerStore, monkeypatch: pytest.MonkeyPatch
):
    overlay_store.max_stack = 2  # the second checkpoint squashes
    with Sandbox.create(overlay_store) as sandbox:
        sandbox.run("echo one > one")
        first = sandbox.checkpoint()
        sandbox.run("echo two > two")
        with pytest.raises(SandboxError, match=r"sealing a checkpoint in .*: No space"):
            checkpoint_with_a_full_disk_at(sandbox, store_module, "squash", monkeypatch)
        assert not sandbox.closed and sandbox.parent == first
        with pytest.raises(UnknownCheckpoint):
            overlay_store.layer(sandbox.upper)  # nothing half-sealed under a running sandbox
        sandbox.run("echo three > three")
        second = sandbox.checkpoint()
    assert overlay_store.layer(second).flat is not None, "the next seal squashed"
    with Sandbox.fork(overlay_store, second) as fork:
        assert fork.run("cat one two three").output == "one\ntwo\nthree\n"
