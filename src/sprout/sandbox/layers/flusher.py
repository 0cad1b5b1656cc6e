"""Making sealed layers durable beside the next turn: one flusher thread per filesystem.

A seal writes a layer's files and metadata and returns: the checkpoint forks and runs at
once. What makes it survive a crash of the machine, not only of the process, is a flush,
and an fsync of each file and folder of every turn was most of what a checkpoint cost. So
a durable store hands each sealed layer (`layer_files.StoreFlushes`) to the flusher of its
filesystem (one per device, shared by every store of the process there), which takes
every layer waiting at once and makes them all durable with one syncfs(2) while the
agent's next model call runs. Where syncfs is missing, each layer's own files are fsynced
one by one instead.

`LayerStore.wait_durable` waits for it: a run records a checkpoint only once it is on
disk. A flush that fails (EIO, ENOSPC) fails every layer it covered, and every layer
handed over on top of one of them: each waiter gets `FlushFailed`. A layer this process
never handed over (sealed by an earlier process, or flushed already) is durable.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from sprout.durable import flush_tree, fsync_directory, fsync_file, syncfs
from sprout.sandbox.errors import FlushFailed

Key = tuple[str, str]
"""A layer handed over: (its store's real path, its id)."""


@dataclass(eq=False)
class _Flush:
    """One layer handed over, and once `done`, the error that failed it (None: on disk)."""

    key: Key
    fallback: Callable[[], None]
    """Its own fsyncs, where there is no syncfs."""
    below: _Flush | None
    """The flush of the layer it stacks on, when that one was not settled yet: a layer is
    durable only once what it stands on is too."""
    error: Exception | None = None
    done: threading.Event = field(default_factory=threading.Event)


class Flusher:
    """The flusher thread of one filesystem (started with its first layer, and again in a
    child made by fork, which has none), and the layers handed to it not settled yet."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._queue: list[_Flush] = []
        self._unsettled: dict[Key, _Flush] = {}
        """Layers waiting for their flush, and those whose flush failed (kept, so that each
        later wait for them fails too); a layer flushed well is dropped."""
        self._thread: threading.Thread | None = None
        self._flushing = False

    def submit(self, key: Key, fallback: Callable[[], None], below: Key | None) -> None:
        """Flush layer `key` with the next batch; `below` is the layer it stacks on."""
        with self._lock:
            flush = _Flush(key, fallback, None if below is None else self._unsettled.get(below))
            self._unsettled[key] = flush
            self._queue.append(flush)
            if self._thread is None or not self._thread.is_alive():  # none yet, or forked
                self._thread = threading.Thread(
                    target=self._run, name="sprout-flusher", daemon=True
                )
                self._thread.start()
            self._lock.notify()

    def wait(self, keys: Iterable[Key], timeout: float | None) -> bool:
        """Whether every layer of `keys` got on disk within `timeout` seconds (None: wait as
        long as it takes); FlushFailed for the first whose flush failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for key in keys:
            with self._lock:
                flush = self._unsettled.get(key)
            if flush is None:
                continue
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not flush.done.wait(left):
                return False
            if flush.error is not None:
                raise FlushFailed(*key, flush.error)
        return True

    def idle(self, timeout: float | None) -> bool:
        """Whether every layer handed over so far got its flush within `timeout` seconds: the
        thread then holds nothing of the filesystem open."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._queue and not self._flushing, timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue:
                    self._lock.wait()
                batch, self._queue = self._queue, []
                self._flushing = True
            _flush(batch)
            with self._lock:
                self._flushing = False
                self._lock.notify_all()
                for flush in batch:  # in the order handed over: what a layer stands on first
                    if flush.error is None and flush.below is not None:
                        flush.error = flush.below.error
                    flush.below = None  # settled: the chain below it can go
                    if flush.error is None and self._unsettled.get(flush.key) is flush:
                        del self._unsettled[flush.key]
                    flush.done.set()


def _flush(batch: Sequence[_Flush]) -> None:
    """Make `batch` durable: one syncfs of its filesystem, else each layer's own fsyncs."""
    try:
        if _syncfs(dict.fromkeys(flush.key[0] for flush in batch)):
            return
    except Exception as error:  # EIO, ENOSPC; and a bug must fail its waiters, never hang them
        for flush in batch:
            flush.error = error
        return
    for flush in batch:
        try:
            flush.fallback()
        except Exception as error:
            flush.error = error


def _syncfs(stores: Iterable[str]) -> bool:
    """syncfs through the first of `stores` that still exists (True when none does: nothing
    of theirs is left to flush); False where there is no syncfs."""
    for path in stores:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            return syncfs(fd)
        finally:
            os.close(fd)
    return True


def fsync_each(trees: Iterable[tuple[str, bool]], files: Iterable[str], folder: str) -> None:
    """A layer's flush where there is no syncfs: each of `trees` (with the files under it
    where its flag says so, else its folders alone), each of `files`, then `folder`."""
    for tree, with_files in trees:
        flush_tree(tree, files=with_files)
    for path in files:
        fsync_file(path)
    fsync_directory(folder)


_flushers: dict[int, Flusher] = {}
"""This process's flushers, by device."""
_flushers_lock = threading.Lock()


def flusher_of(path: str) -> Flusher:
    """The flusher of the filesystem `path` is on (made with the first layer there)."""
    device = os.stat(path).st_dev
    with _flushers_lock:
        if device not in _flushers:
            _flushers[device] = Flusher()
        return _flushers[device]


def drain(timeout: float | None = None) -> bool:
    """Wait until every layer this process handed over has had its flush (or failed it);
    False if `timeout` seconds passed first. Until then a flusher holds its filesystem open
    (syncfs needs a descriptor there): a caller that unmounts one drains first."""
    with _flushers_lock:
        flushers = list(_flushers.values())
    deadline = None if timeout is None else time.monotonic() + timeout
    for flusher in flushers:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not flusher.idle(left):
            return False
    return True
