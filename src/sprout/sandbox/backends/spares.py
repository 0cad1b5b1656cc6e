"""Spare per-sandbox pieces, made ahead of need by a thread of sprout's.

A sandbox's first call needs a launcher inside a fresh cgroup set (jail/launcher.py,
jail/cgroups.py) and a network namespace under its policy (network/namespace.py): processes
started and waited for, most of a fork's first call, and none of it depends on the
sandbox's layers. As the warm pools of E2B or Firecracker do, sprout keeps a few ready:

- A kind (a launcher for one helper, cgroup set-up and id range; a network of one setting, root or
  rootless) gets spares once a sandbox asked for one of it: FIRST_SPARES, and one more, up
  to MAX_PER_KIND, each time an ask found none ready (sandboxes made at once want as many),
  at most MAX_SPARES in all, made one at a time by one thread that the first ask starts (a
  process that makes no sandbox starts none). A kind nobody asked for in IDLE_S seconds
  has its spares ended: a process between bursts of sandboxes holds none.
- Taking never waits: with none ready, the sandbox makes its own as it would without the
  pool. Every take has the thread make up the number: at once when none is left ready,
  else SETTLE_S later, once the taker's first call has had the cores.
- A spare goes to one sandbox, once, and ends with it: nothing goes back to the pool.
- A spare launcher's cgroup has no limits, and the launcher runs nothing until taken:
  `take_launcher` writes the sandbox's limits before it returns it.
- A spare network's firewall was written from this machine's addresses and the run's
  refusals as they were when it was made: it is given only while both still are
  (`SandboxNetwork.usable`), else ended, and the sandbox makes a fresh one.
- Spares end at exit (`release`, atexit), or when a test calls `release`; their processes
  die with sprout anyway (the launcher and the network's holder at end of file on their
  socket and pipe, the stack on its exit pipe), and a killed sprout's cgroups are swept at
  the next start (cgroups.sweep_stale).
"""

from __future__ import annotations

import atexit
import functools
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from sprout.sandbox.jail.cgroups import CgroupLimits, CgroupSupport, SandboxCgroup
from sprout.sandbox.jail.idmap import IdRange
from sprout.sandbox.jail.launcher import Launcher
from sprout.sandbox.network.namespace import SandboxNetwork
from sprout.sandbox.network.policy import Network
from sprout.sandbox.teardown import drain, later

FIRST_SPARES = 2
MAX_PER_KIND = 8
MAX_SPARES = 16
"""Over all kinds: many allow-lists in one run must not hold a network each in spares."""
SETTLE_S = 0.04
"""After a take that leaves a kind spares ready, how long the thread waits before making up
its number: the taker's first call (which mounts its root) then has the cores to itself
instead of sharing them with a launcher and a network being made. A kind with none ready
is made up at once."""
IDLE_S = 2.0
"""How long a kind keeps its spares after the last ask for one: short, so that an idle
process holds none for long (`sprout bench scale` checks that nothing of its sandboxes is
left 5 s after they close)."""


@dataclass
class SpareLauncher:
    """A launcher in a fresh cgroup set of its own, without limits (one of no directories
    where this machine gives sprout no cgroups), holding a user namespace of the store's ids
    when run as root."""

    launcher: Launcher
    cgroup: SandboxCgroup

    @classmethod
    def make(cls, helper: str, found: CgroupSupport, ids: IdRange | None) -> SpareLauncher:
        cgroup = SandboxCgroup.create(None, found)
        try:
            return cls(Launcher.start(helper, cgroup.directories, ids), cgroup)
        except BaseException:
            cgroup.remove()
            raise

    def close(self) -> None:
        """The launcher ends (at once: it holds no root yet), then its cgroup is removed on
        the teardown thread."""
        self.launcher.close()
        later(self.cgroup.remove)


@dataclass
class _Kind:
    """The spares of one kind, and how to make and check one."""

    make: Callable[[], Any]
    usable: Callable[[Any], bool]
    asked_at: float
    ready: deque[Any] = field(default_factory=deque)
    wanted: int = FIRST_SPARES
    held_until: float = 0.0
    """Not made up before then, while it has spares ready (SETTLE_S)."""
    failed: bool = False
    """Its last making failed: it is tried again at the next ask, not in a loop (the
    sandbox that asks makes its own, and says what fails)."""

    def drop(self) -> list[Any]:
        dropped = list(self.ready)
        self.ready.clear()
        return dropped


class _Pool:
    """The kinds asked for, their ready spares, and the thread that makes them (started by
    the first ask); `changed` guards all of it and wakes the thread."""

    def __init__(self) -> None:
        self.kinds: dict[Hashable, _Kind] = {}
        self.making: _Kind | None = None
        self.changed = threading.Condition()
        self.thread: threading.Thread | None = None

    def take(self, key: Hashable, make: Callable[[], Any], usable: Callable[[Any], bool]) -> Any:
        """A ready spare of kind `key` that passes `usable`, or None; spares that fail it end."""
        with self.changed:
            kind = self.kinds.get(key)
            if kind is None:
                kind = self.kinds[key] = _Kind(make, usable, 0.0)
            elif not kind.ready:
                kind.wanted = min(kind.wanted + 1, MAX_PER_KIND)
            kind.asked_at = time.monotonic()
            kind.failed = False
            spare = kind.ready.popleft() if kind.ready else None
            if kind.ready:
                kind.held_until = time.monotonic() + SETTLE_S
            if self.thread is None:
                self.thread = threading.Thread(target=self.serve, name="sprout-spares")
                self.thread.daemon = True
                self.thread.start()
            self.changed.notify_all()
        while spare is not None and not self._usable(kind, spare):
            spare.close()
            with self.changed:
                spare = kind.ready.popleft() if kind.ready else None
                self.changed.notify_all()
        return spare

    @staticmethod
    def _usable(kind: _Kind, spare: Any) -> bool:
        try:
            return kind.usable(spare)
        except BaseException:  # e.g. a malformed REFUSE_ENV: the caller hears of it
            spare.close()
            raise

    def serve(self) -> None:
        while True:
            with self.changed:
                idle = self._idle_spares()
                kind = self._wanted()
                if kind is None and not idle:
                    self.changed.wait(self._until_due())
                    continue
                self.making = kind
            for spare in idle:
                spare.close()
            if kind is not None:
                self._make(kind)

    def _make(self, kind: _Kind) -> None:
        try:
            spare = kind.make()
        except Exception:  # the next sandbox of this kind makes its own and raises the error
            spare = None
        with self.changed:
            kept = spare is not None and any(k is kind for k in self.kinds.values())
            if kept:
                kind.ready.append(spare)
            kind.failed = spare is None
        if spare is not None and not kept:  # its kind ended while it was made
            spare.close()
        with self.changed:
            self.making = None
            self.changed.notify_all()

    def _wanted(self) -> _Kind | None:
        """The kind shortest of spares (each in turn, when a launcher and a network are
        taken together), while the pool holds fewer than MAX_SPARES."""
        if sum(len(kind.ready) for kind in self.kinds.values()) >= MAX_SPARES:
            return None
        now = time.monotonic()
        short = [
            k
            for k in self.kinds.values()
            if not k.failed and len(k.ready) < k.wanted and (not k.ready or now >= k.held_until)
        ]
        return max(short, key=lambda k: k.wanted - len(k.ready), default=None)

    def _idle_spares(self) -> list[Any]:
        """The spares of kinds nobody asked for in IDLE_S, their kinds forgotten."""
        now = time.monotonic()
        idle = [key for key, kind in self.kinds.items() if now - kind.asked_at > IDLE_S]
        return [spare for key in idle for spare in self.kinds.pop(key).drop()]

    def _until_due(self) -> float | None:
        now = time.monotonic()
        left = [kind.asked_at + IDLE_S - now for kind in self.kinds.values()]
        left += [k.held_until - now for k in self.kinds.values() if k.held_until > now]
        return max(min(left), 0.0) + 0.001 if left else None

    def release(self) -> None:
        with self.changed:
            kinds = list(self.kinds.values())
            self.kinds.clear()
            self.changed.wait_for(lambda: self.making is None)
            dropped = [spare for kind in kinds for spare in kind.drop()]
        for spare in dropped:
            spare.close()


_pool = _Pool()


def take_launcher(
    helper: str, found: CgroupSupport, limits: CgroupLimits, ids: IdRange | None
) -> tuple[Launcher, SandboxCgroup] | None:
    """A spare launcher of the store's `ids` and its cgroup, `limits` written; None when
    none is ready. OSError (the spare ended) when the limits cannot be written."""
    key = ("launcher", helper, tuple(found.parents.items()), ids)
    make = functools.partial(SpareLauncher.make, helper, found, ids)
    spare: SpareLauncher | None = _pool.take(key, make, lambda s: s.launcher.alive)
    if spare is None:
        return None
    try:
        spare.cgroup.limit(limits)
    except BaseException:
        spare.close()
        raise
    return spare.launcher, spare.cgroup


def take_network(helper: str, setting: Network, rootless: bool) -> SandboxNetwork | None:
    """A spare network of `setting`, its firewall still right; None when none is ready."""
    make = functools.partial(SandboxNetwork.start, helper, setting, rootless)
    network: SandboxNetwork | None = _pool.take(
        ("network", helper, setting, rootless), make, lambda n: n.usable
    )
    return network


def release() -> None:
    """End every spare now (a kind asked for again gets new ones), and wait until they and
    every closed sandbox's processes and cgroups are gone (`teardown.drain`)."""
    _pool.release()
    drain()


def _forget_in_child() -> None:
    """A forked child has no thread of the pool, and its parent's spares are the parent's."""
    global _pool
    _pool = _Pool()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(release)
