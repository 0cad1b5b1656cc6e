"""The flusher: sealed layers made durable beside the caller's next work, one syncfs(2) of
their filesystem for every layer waiting, whichever store of the process sealed it; a flush
that fails reaches every layer it covered, and every layer on top of one."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sprout.durable import syncfs
from sprout.sandbox import FlushFailed, LayerStore
from sprout.sandbox.layers import flusher
from sprout.sandbox.types import SandboxConfig

CONFIG = SandboxConfig("host", "/workspace")
WAIT_S = 30.0
"""How long a test waits for the flusher thread before it fails."""


class HeldSyncfs:
    """syncfs counted, each call waiting for `release` first (set: no wait), then failing
    with `error` when one is given."""

    def __init__(self, error: OSError | None = None) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        self.error = error

    def __call__(self, fd: int) -> bool:
        self.calls += 1
        self.entered.set()
        assert self.release.wait(WAIT_S), "the test never let the flush go"
        if self.error is not None:
            raise self.error
        return syncfs(fd)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldSyncfs]:
    """The flusher's syncfs, held until the test releases it."""
    found = HeldSyncfs()
    monkeypatch.setattr(flusher, "syncfs", found)
    yield found
    found.release.set()  # a flush the test left waiting goes on, so no thread hangs


def store(path: Path, *, durable: bool = True) -> LayerStore:
    """A store on the test's own disk (every one of them on the same filesystem)."""
    return LayerStore(path, mode="copy", durable=durable, place=False)


def seal(layers: LayerStore, parent: str | None = None) -> str:
    """A new layer holding one file, sealed on `parent`."""
    layer_id = layers.new_layer(parent)
    Path(layers.diff_dir(layer_id), "file").write_text(layer_id)
    layers.seal(layer_id, parent, CONFIG)
    layers.discard(layer_id)  # its hold and scratch: the sealed files stay
    return layer_id


def in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """`work` started in a thread; the list gets what it returned or raised."""
    found: list[object] = []

    def run() -> None:
        try:
            found.append(work())
        except Exception as error:
            found.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, found


def test_durable_syncfs_flushes_a_filesystem_and_says_why_it_cannot(tmp_path: Path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert syncfs(fd) is True
    finally:
        os.close(fd)
    with pytest.raises(OSError) as raised:
        syncfs(fd)  # closed: the C library's errno comes back
    assert raised.value.errno == errno.EBADF


def test_concurrent_seals_of_several_stores_share_one_syncfs(tmp_path: Path, held: HeldSyncfs):
    stores = [store(tmp_path / name) for name in ("a", "b", "c")]
    first = seal(stores[0])
    assert held.entered.wait(WAIT_S), "the first layer's flush never started"
    sealed: list[list[str]] = [[] for _ in stores]

    def seal_four(index: int) -> None:
        sealed[index] += [seal(stores[index]) for _ in range(4)]

    threads = [threading.Thread(target=seal_four, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not stores[1].wait_durable(*sealed[1], timeout=0.05), "held: nothing is on disk"
    held.release.set()

    assert stores[0].wait_durable(first, *sealed[0], timeout=WAIT_S)
    for layers, ids in zip(stores, sealed, strict=True):
        assert layers.wait_durable(*ids, timeout=WAIT_S)
    assert held.calls == 2, "the twelve layers sealed meanwhile went in one syncfs"


def test_a_failed_flush_fails_every_layer_it_covered_and_those_on_top(
    tmp_path: Path, held: HeldSyncfs
):
    held.error = OSError(errno.EIO, os.strerror(errno.EIO))
    a, b = store(tmp_path / "a"), store(tmp_path / "b")
    first = seal(a)
    assert held.entered.wait(WAIT_S)
    covered = [(a, seal(a, first)), (b, seal(b))]
    waiters = [in_thread(lambda s=s, i=i: s.wait_durable(i)) for s, i in [(a, first), *covered]]
    held.release.set()
    for thread, _ in waiters:
        thread.join(WAIT_S)

    for (thread, found), (layers, layer_id) in zip(waiters, [(a, first), *covered], strict=True):
        assert not thread.is_alive()
        (error,) = found
        assert isinstance(error, FlushFailed), error
        assert str(error) == (
            f"{os.path.realpath(layers.path)}: checkpoint {layer_id} not flushed to disk: "
            "Input/output error"
        )
    with pytest.raises(FlushFailed):
        a.wait_durable(first)  # and again: a failure is kept
    held.error = None
    on_top = seal(a, covered[0][1])  # its own flush goes well; what it stands on did not
    with pytest.raises(FlushFailed, match=f"checkpoint {on_top} not flushed"):
        a.wait_durable(on_top, timeout=WAIT_S)
    assert b.wait_durable(seal(b), timeout=WAIT_S), "a layer on nothing that failed is fine"


def test_an_old_layer_an_unknown_one_and_a_store_not_durable_need_no_wait(
    tmp_path: Path, held: HeldSyncfs
):
    layers = store(tmp_path / "store")
    held.release.set()
    old = seal(layers)
    assert layers.wait_durable(old, timeout=WAIT_S)
    held.release.clear()  # from now on every flush waits
    new = seal(layers, old)
    assert held.entered.wait(WAIT_S)

    assert layers.wait_durable(old, timeout=0), "flushed already"
    assert store(tmp_path / "store").wait_durable(old, "0123456789", timeout=0), (
        "another store object of the same folder; a layer this process never sealed"
    )
    assert not layers.wait_durable(new, timeout=0.05)
    calls = held.calls
    loose = store(tmp_path / "loose", durable=False)
    assert loose.wait_durable(seal(loose), timeout=0), "a store that is not durable"
    assert held.calls == calls, "and it flushed nothing"
    held.release.set()
    assert store(tmp_path / "store").wait_durable(new, timeout=WAIT_S), "by any store object"


def test_without_syncfs_each_layer_is_fsynced_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    synced: list[str] = []
    monkeypatch.setattr(flusher, "syncfs", lambda fd: False)
    monkeypatch.setattr(flusher, "fsync_file", synced.append)
    monkeypatch.setattr(flusher, "flush_tree", lambda root, files: synced.append(root))
    layers = store(tmp_path / "store")
    layer_id = seal(layers)

    assert layers.wait_durable(layer_id, timeout=WAIT_S)
    assert synced == [layers.diff_dir(layer_id), f"{layers.meta_dir}/{layer_id}.json"]


def test_drain_waits_until_no_flush_holds_the_filesystem_open(tmp_path, held):
    """A caller that unmounts a store's filesystem drains first: a flush still running holds
    a descriptor there (syncfs), and the unmount would find the filesystem busy."""
    layers = store(tmp_path / "store")
    seal(layers)
    assert held.entered.wait(WAIT_S)
    assert not flusher.drain(timeout=0.2), "drain returned while a flush ran"
    held.release.set()
    assert flusher.drain(timeout=WAIT_S)
