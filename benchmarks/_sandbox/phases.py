"""A call's phases, as the helper reports them on its --timings-fd (box.c's `mark`), and a
fork's, timed around the steps its first call takes.

A call writes "PHASE NANOSECONDS" lines (CLOCK_MONOTONIC, Python's `time.monotonic_ns`) as
each phase ends; with sprout's own instants before the call and after it returns, they
split the call into:

- launch: sprout builds the call and hands it to the sandbox's launcher, which forks it;
- mounts: the sandbox's root entered (or built: the first call after a checkpoint), then
  the call's IPC and PID namespaces, its /proc, /dev/pts and /dev/shm;
- limits: the command's user namespace, rlimits and capabilities;
- seccomp: loading the filter;
- shell: exec of the shell to its exit (`true` runs in it);
- teardown: the PID namespace and the call's mounts gone, the launcher's report back.
"""

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sprout.sandbox import LayerStore, Sandbox

CALL_PHASES = ("launch", "mounts", "limits", "seccomp", "shell", "teardown")
ENDS = {
    "launch": "start",
    "mounts": "proc",
    "limits": "limits",
    "seccomp": "seccomp",
    "shell": "command",
    "teardown": "end",
}
"""The mark that ends each phase (`end`: sprout has the call's result)."""
FORK_PHASES = ("fork", "network", "launcher", "first call")


class BenchCallFailed(Exception):
    """A timed call failed: its figures would time an error path."""


@dataclass
class CallPhases:
    """One call: seconds per phase, and whether it built the sandbox's root or entered it."""

    seconds: dict[str, float]
    root: str

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


class PhaseReader:
    """Times a sandbox's calls by phase, through a pipe its calls write their marks to."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        self._backend: Any = sandbox._backend
        self._backend.timings = self._write

    def call(self, command: str = "true") -> CallPhases:
        start = time.monotonic_ns()
        observation = self.sandbox.run(command)
        end = time.monotonic_ns()
        if observation.exit_code != 0:
            raise BenchCallFailed(f"{command}: exit {observation.exit_code}: {observation.output}")
        marks = {"end": end}
        for line in os.read(self._read, 65536).decode().splitlines():
            name, at = line.split()
            marks[name] = int(at)
        seconds, before = {}, start
        for phase in CALL_PHASES:
            seconds[phase] = (marks[ENDS[phase]] - before) / 1e9
            before = marks[ENDS[phase]]
        return CallPhases(seconds, "built" if "root-built" in marks else "entered")

    def close(self) -> None:
        self._backend.timings = None
        os.close(self._read)
        os.close(self._write)


def fork_phases(store: LayerStore, checkpoint: str) -> tuple[dict[str, float], Sandbox]:
    """`Sandbox.fork` and its first `run("true")`, by step: the fork (a layer and a cgroup),
    the network and the launcher the first call starts (made here first, as it makes them),
    and the call itself, which mounts the root. The caller closes the sandbox."""
    seconds: dict[str, float] = {}

    def step(name: str, action: Callable[[], Any]) -> Any:
        begun = time.perf_counter()
        result = action()
        seconds[name] = time.perf_counter() - begun
        return result

    sandbox: Sandbox = step("fork", lambda: Sandbox.fork(store, checkpoint))
    backend: Any = sandbox._backend
    step("network", lambda: backend._network_fds(sandbox))
    step("launcher", backend._launcher)
    observation = step("first call", lambda: sandbox.run("true"))
    if observation.exit_code != 0:
        sandbox.close()
        raise BenchCallFailed(f"first call: exit {observation.exit_code}: {observation.output}")
    return seconds, sandbox
