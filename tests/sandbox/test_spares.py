"""The pool of spare launchers and networks (backends/spares.py): a fork's first call takes
what is ready, and nothing of the pool loosens a sandbox: each spare goes to one sandbox,
its limits are the sandbox's, a spare whose firewall is out of date is never given, and
nothing is left once the sandboxes close and the pool is released."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sprout.sandbox import LayerStore, Limits, Sandbox, teardown
from sprout.sandbox.backends import spares
from sprout.sandbox.jail import cgroups
from sprout.sandbox.network import namespace
from tests.support.sandbox_cgroups import own_cgroups, require_sandbox_cgroups

pytestmark = pytest.mark.sandbox

MIB = 1024**2
FORKS = """python3 -c '
import os, time
forked = 0
try:
    while forked < 100:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        forked += 1
except OSError as error:
    print(error.strerror, forked)
'"""


@pytest.fixture(autouse=True)
def _released() -> Iterator[None]:
    """Each test starts and ends with no spares (the pool is the process's, not the test's)."""
    spares.release()
    yield
    spares.release()


@pytest.fixture
def checkpoint(overlay_store: LayerStore) -> str:
    """A checkpoint whose sandbox ran a call: the pool makes spares of its kinds from then."""
    with Sandbox.create(overlay_store) as sandbox:
        sandbox.run("true")
        return sandbox.checkpoint(always=True)


def _spare_processes(of: str | None = None) -> set[int]:
    """The pids of every ready spare's launcher and network processes (`of`: one kind's)."""
    found: set[int] = set()
    with spares._pool.changed:
        for key, kind in spares._pool.kinds.items():
            for spare in kind.ready if of in (None, key[0]) else ():
                if isinstance(spare, spares.SpareLauncher):
                    found.add(spare.launcher.process.pid)
                else:
                    found |= {p.pid for p in (spare.holder, spare.stack) if p is not None}
    return found


def _wait_for_spares(kinds: int = 2) -> set[int]:
    """Wait until `kinds` kinds each hold the spares they want; their processes."""
    deadline = time.monotonic() + 30
    while True:
        with spares._pool.changed:
            full = [k for k in spares._pool.kinds.values() if len(k.ready) >= k.wanted]
        if len(full) >= kinds:
            return _spare_processes()
        assert time.monotonic() < deadline, "the pool made no spares"
        time.sleep(0.01)


def _pieces(sandbox: Sandbox) -> tuple[int, int, tuple[str, ...]]:
    """The pids of the sandbox's launcher and network holder, and its cgroup directories."""
    backend: Any = sandbox._backend
    return (
        backend.launcher.process.pid,
        backend.network.holder.pid,
        tuple(backend.cgroup.directories),
    )


def _descendants() -> set[int]:
    """Every live process below this one (zombies included: they are not reaped yet)."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        children.setdefault(int(text[text.rindex(")") + 2 :].split()[1]), []).append(int(entry))
    found, queue = set(), [os.getpid()]
    while queue:
        below = children.get(queue.pop(), [])
        found.update(below)
        queue += below
    return found


def test_a_forks_first_call_takes_the_spares_made_before_it(
    overlay_store: LayerStore, checkpoint: str
) -> None:
    ready = _wait_for_spares()
    with Sandbox.fork(overlay_store, checkpoint) as fork:
        assert fork.run("echo hi").output == "hi\n"
        launcher, holder, _ = _pieces(fork)
    assert {launcher, holder} <= ready, "the first call started its own launcher and network"
    _wait_for_spares()  # and the pool makes up the number


def test_a_taken_spare_holds_the_sandboxs_limits(
    overlay_store: LayerStore, checkpoint: str
) -> None:
    found = require_sandbox_cgroups()
    ready = _wait_for_spares()
    limits = Limits(memory_bytes=256 * MIB, processes=20)
    allocate = "python3 -c 'x = bytearray({} * 1024 * 1024); print(len(x))'"
    with Sandbox.fork(overlay_store, checkpoint, limits=limits) as fork:
        hog = fork.run(allocate.format(1024), timeout=60)
        small = fork.run(allocate.format(64), timeout=60)
        forks = fork.run(FORKS, timeout=60).output.strip()
        launcher, _, directories = _pieces(fork)
        pids = os.path.join(found.parents["pids"], os.path.basename(directories[0]))
        with open(os.path.join(pids, "pids.max"), encoding="ascii") as handle:
            pids_max = handle.read().strip()
    assert launcher in ready, "the sandbox did not take a spare launcher"
    assert hog.exit_code != 0 and str(1024 * MIB) not in hog.output
    assert small.exit_code == 0 and small.output == f"{64 * MIB}\n"
    message, _, forked = forks.rpartition(" ")
    assert message == "Resource temporarily unavailable" and int(forked) <= 19, forks
    assert pids_max == str(20 + 2)  # the limit, a call's helper (its init), and the launcher


@pytest.mark.parametrize("change", ["address", "refused"])
def test_a_spare_network_whose_firewall_is_out_of_date_is_never_given(
    overlay_store: LayerStore,
    checkpoint: str,
    change: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """This machine gained an address (faked), or the run refuses one more: every spare's
    firewall lacks it, so the sandbox gets a fresh network whose firewall has it."""
    ready = _wait_for_spares()
    stale = _spare_processes("network")
    added = "198.51.100.77"
    if change == "address":
        real = namespace.ipv4_addresses
        monkeypatch.setattr(namespace, "ipv4_addresses", lambda: [*real(), added])
    else:
        monkeypatch.setenv(namespace.REFUSE_ENV, added)
    with Sandbox.fork(overlay_store, checkpoint) as fork:
        assert fork.run("true").exit_code == 0
        launcher, holder, _ = _pieces(fork)
        backend: Any = fork._backend
        refuses = backend.network.refuses
    assert launcher in ready, "a spare launcher depends on no address: it is still taken"
    assert holder not in ready, "a stale spare network was given"
    assert any(entry.split("/")[0] == added for entry in refuses)
    teardown.drain()
    assert not stale & (_spare_processes() | _descendants()), "the stale spares were kept"


def test_sandboxes_forked_at_once_never_share_a_spare(
    overlay_store: LayerStore, checkpoint: str
) -> None:
    _wait_for_spares()
    opened: list[Sandbox] = []
    seen: list[tuple[int, int, tuple[str, ...], str]] = []
    lock = threading.Lock()

    def fork_and_call() -> None:
        sandbox = Sandbox.fork(overlay_store, checkpoint)
        netns = sandbox.run("readlink /proc/self/ns/net").output
        with lock:
            opened.append(sandbox)
            seen.append((*_pieces(sandbox), netns))

    threads = [threading.Thread(target=fork_and_call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len(seen) == 6
        for position in range(4):
            assert len({row[position] for row in seen}) == 6, seen
        wanted = [kind.wanted for kind in spares._pool.kinds.values()]
        assert max(wanted) > spares.FIRST_SPARES, "sandboxes made at once want more spares"
    finally:
        for sandbox in opened:
            sandbox.close()


def test_nothing_is_left_once_the_sandboxes_close_and_the_pool_is_released(
    overlay_store: LayerStore, checkpoint: str
) -> None:
    found = require_sandbox_cgroups()
    before = _descendants()
    cgroups_before = own_cgroups(found)
    _wait_for_spares()
    forks = [Sandbox.fork(overlay_store, checkpoint, network=n) for n in (True, False, True)]
    for fork in forks:
        assert fork.run("echo x > /tmp/x && cat /tmp/x").output == "x\n"
    for fork in forks:
        fork.close()
    spares.release()
    assert _descendants() - before == set()
    assert own_cgroups(found) - cgroups_before == set()
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        assert overlay_store.path not in handle.read()


def test_a_kind_nobody_asks_for_ends_its_spares(
    overlay_store: LayerStore, checkpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process between bursts of sandboxes holds no spare for long."""
    monkeypatch.setattr(spares, "IDLE_S", 0.3)
    with Sandbox.fork(overlay_store, checkpoint) as fork:
        fork.run("true")
    held = _wait_for_spares()
    deadline = time.monotonic() + 10
    while spares._pool.kinds or held & _descendants():
        assert time.monotonic() < deadline, "idle spares were kept"
        time.sleep(0.05)
    teardown.drain()


def test_only_the_kinds_asked_for_get_spares(overlay_store: LayerStore) -> None:
    with Sandbox.create(overlay_store, network=False) as sandbox:
        sandbox.run("true")
    _wait_for_spares()
    settings = [key[2] for key in spares._pool.kinds if key[0] == "network"]
    assert settings == [False], "a public network was made for a process that used none"


KILLED = """
import sys, time
from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.backends import spares
from sprout.sandbox.jail import cgroups
with Sandbox.create(LayerStore(sys.argv[1])) as sandbox:
    sandbox.run("true")
while sum(len(kind.ready) for kind in spares._pool.kinds.values()) < 4:
    time.sleep(0.01)
held = []
for kind in spares._pool.kinds.values():
    for spare in kind.ready:
        if isinstance(spare, spares.SpareLauncher):
            held += [spare.launcher.process.pid, *spare.cgroup.directories]
        else:
            held += [spare.holder.pid, spare.stack.pid]
print(*held, flush=True)
time.sleep(60)
"""


def test_a_killed_sprouts_spares_die_with_it(tmp_path: Path) -> None:
    """The launcher and the holder see end of file on their socket and pipe, the stack on
    its exit pipe; the cgroups are swept at the next start."""
    found = require_sandbox_cgroups()
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(tmp_path / "store")], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    held = child.stdout.readline().split()
    child.kill()
    child.wait()
    pids = [int(entry) for entry in held if entry.isdigit()]
    directories = [entry for entry in held if not entry.isdigit()]
    assert len(pids) >= 6 and directories, held
    deadline = time.monotonic() + 10
    while any(os.path.exists(f"/proc/{pid}") for pid in pids):
        assert time.monotonic() < deadline, "a spare outlived the process that made it"
        time.sleep(0.05)
    for parent in set(found.parents.values()):
        cgroups.sweep_stale(parent)
    assert not any(os.path.exists(directory) for directory in directories)


def test_a_process_that_makes_no_sandbox_starts_no_thread() -> None:
    script = (
        "import threading, sprout.sandbox, sprout.sandbox.backends.overlay\n"
        "print(sorted(t.name for t in threading.enumerate()))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.stdout == "['MainThread']\n", out.stderr


class _Token:
    """A spare of a pool under test: nothing to start or end."""

    def close(self) -> None:
        pass


def test_a_take_that_leaves_spares_ready_lets_the_first_call_have_the_cores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The spare taken by a fork's first call is made up only SETTLE_S later while another
    is ready (the call mounts its root meanwhile), and at once when none is left."""
    monkeypatch.setattr(spares, "SETTLE_S", 1.0)
    pool = spares._Pool()
    made: list[float] = []

    def make() -> _Token:
        made.append(time.monotonic())
        return _Token()

    def made_by(count: int) -> None:
        deadline = time.monotonic() + 10
        while len(made) < count:
            assert time.monotonic() < deadline, f"the pool made {len(made)} of {count}"
            time.sleep(0.005)

    try:
        assert pool.take("kind", make, lambda spare: True) is None  # the first ask finds none
        made_by(spares.FIRST_SPARES)
        taken = time.monotonic()
        assert pool.take("kind", make, lambda spare: True) is not None  # one is left ready
        made_by(spares.FIRST_SPARES + 1)
        assert made[-1] - taken >= 0.9, "made up while the taker's first call ran"
        pool.take("kind", make, lambda spare: True)
        emptied = time.monotonic()
        assert pool.take("kind", make, lambda spare: True) is not None  # none left now
        made_by(spares.FIRST_SPARES + 2)
        assert made[-1] - emptied < 0.5, "a kind with no spare ready waited"
    finally:
        pool.release()
