"""The sandbox's launcher: one process, inside the sandbox's cgroups, that starts every call,
so that no call joins a cgroup (on cgroup v1 a join waits for an RCU grace period: the tail
of a call's latency, docs/benchmarks.md). What the jail must keep: every call runs inside
the cgroups, a helper outside them refuses to run, and a lost launcher costs its call only.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import threading
import time
from typing import Any

import pytest

from sprout.sandbox import LayerStore, Observation, Sandbox, teardown
from tests.support.processes import ProcessWatch
from tests.support.sandbox_cgroups import processes_in, require_sandbox_cgroups

pytestmark = pytest.mark.sandbox


def _in_background(sandbox: Sandbox, command: str) -> tuple[threading.Thread, list[Observation]]:
    done: list[Observation] = []
    thread = threading.Thread(target=lambda: done.append(sandbox.run(command, timeout=60)))
    thread.start()
    return thread, done


def _cgroups_of(sandbox: Sandbox) -> list[str]:
    """The sandbox's cgroup directories, made (or taken from the spares) by its first call."""
    backend: Any = sandbox._backend
    return list(backend.cgroup.directories)


def _wait_for(procs: ProcessWatch, marker: str) -> int:
    deadline = time.monotonic() + 30
    while not (found := procs.matching(marker)):
        assert time.monotonic() < deadline, "the call's command never started"
        time.sleep(0.01)
    return found[0]


def test_between_calls_the_launcher_alone_is_in_the_cgroups_and_each_call_starts_inside(
    overlay_store: LayerStore, procs: ProcessWatch, marker: str
) -> None:
    require_sandbox_cgroups()
    with Sandbox.create(overlay_store) as sandbox:
        assert sandbox.run("echo first").output == "first\n"
        directories = _cgroups_of(sandbox)
        (launcher,) = processes_in(directories[0])
        assert all(processes_in(d) == {launcher} for d in directories)
        thread, done = _in_background(sandbox, f"sleep {marker}")
        command = _wait_for(procs, marker)
        assert all(command in processes_in(d) for d in directories)
        os.kill(command, signal.SIGKILL)
        thread.join()
        assert done[0].exit_code == 137
        assert all(processes_in(d) == {launcher} for d in directories)
    teardown.drain()
    assert not os.path.exists(f"/proc/{launcher}"), "the launcher outlived its sandbox"
    assert not any(os.path.exists(d) for d in directories), "its cgroups outlived it"


def test_a_call_started_outside_the_cgroups_refuses_to_run(overlay_store: LayerStore) -> None:
    require_sandbox_cgroups()
    with Sandbox.create(overlay_store) as sandbox:
        backend = sandbox._backend
        backend._launcher()  # the sandbox's cgroups, as a call's first step makes them
        argv = backend._argv(sandbox, ["-c", "echo ran"], launched=True)
        fds = backend._network_fds(sandbox)
        outside = subprocess.run(argv, capture_output=True, text=True, pass_fds=fds)
    assert outside.returncode == 125 and "ran" not in outside.stdout
    assert "not inside the sandbox's cgroups" in outside.stderr


def test_a_root_launcher_refuses_a_rootless_call_and_says_why(overlay_store: LayerStore) -> None:
    """A root launcher's calls are born in namespaces of the store's host ids: a call asking
    for a user namespace of its own (--rootless) would run in them, so it is refused."""
    if overlay_store.ids is None:
        pytest.skip("a rootless store's launcher holds no user namespace of host ids")
    with Sandbox.create(overlay_store) as sandbox:
        sandbox.run("true")
        backend: Any = sandbox._backend
        argv = backend._argv(sandbox, ["-c", "echo ran"], launched=True)
        for flag, rootless in (("--idmap", ["--rootless"]), ("--netns-fd", ["--no-network"])):
            at = argv.index(flag)  # a rootless network comes with a user namespace: none here
            argv[at : at + 2] = rootless
        call = backend.launcher.launch(argv, {}, {})
        assert call.stdout is not None
        said = call.stdout.read().decode()
        assert call.wait(30) == 125 and "ran" not in said
        assert "--rootless: this launcher holds a user namespace of host ids" in said
        assert sandbox.run("echo still").output == "still\n", "the launcher serves on"


def test_a_lost_launcher_ends_its_call_and_the_next_call_gets_another(
    overlay_store: LayerStore, procs: ProcessWatch, marker: str
) -> None:
    """As when the OOM killer of the sandbox's memory cgroup picks the launcher: the call in
    flight ends as killed, with every process of it, and the sandbox goes on."""
    require_sandbox_cgroups()
    with Sandbox.create(overlay_store) as sandbox:
        sandbox.run("true")
        directory = _cgroups_of(sandbox)[0]
        (launcher,) = processes_in(directory)
        thread, done = _in_background(sandbox, f"sleep {marker}")
        _wait_for(procs, marker)
        os.kill(launcher, signal.SIGKILL)
        thread.join()
        assert done[0].exit_code == 137 and procs.survivors(marker) == []
        assert sandbox.run("echo still usable").output == "still usable\n"
        (another,) = processes_in(directory)
        assert another != launcher


def test_calls_run_in_a_process_holding_descriptors_past_1024(overlay_store: LayerStore) -> None:
    """Hundreds of open sandboxes hold that many (select(2) cannot wait on them)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if max(soft, hard) < 1200:
        pytest.skip(f"RLIMIT_NOFILE {soft}/{hard}: too few descriptors to pass 1024")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        with Sandbox.create(overlay_store) as sandbox:
            assert sandbox.run("echo past 1024").output == "past 1024\n"
            assert sandbox.run("sleep 5", timeout=0.5).timed_out
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_call_as_root_can_neither_see_nor_signal_its_launcher(overlay_store: LayerStore) -> None:
    """The attack: root inside kills every process it can name, and looks for the launcher's
    id among them; the launcher lives on outside the call's PID namespace, the same process."""
    require_sandbox_cgroups()
    with Sandbox.create(overlay_store) as sandbox:
        sandbox.run("true")
        directory = _cgroups_of(sandbox)[0]
        (launcher,) = processes_in(directory)
        attack = sandbox.run(
            "id -u; kill -KILL -1 2>/dev/null; "
            f"kill -KILL {launcher} 2>/dev/null && echo reached || echo unreached; "
            "ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '",
            timeout=30,
        )
        lines = attack.output.splitlines()
        assert lines[0] == "0", "the call runs as root inside"
        seen = {int(pid) for pid in lines[-1].split()}
        assert launcher not in seen and lines[1] == "unreached", "the launcher's id names nothing"
        assert os.path.exists(f"/proc/{launcher}"), "a call killed its launcher"
        assert sandbox.run("echo next").output == "next\n"
        assert processes_in(directory) == {launcher}, "the next call came from the same one"
