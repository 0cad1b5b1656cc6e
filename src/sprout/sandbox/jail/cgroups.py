"""Memory, process and CPU limits that bind root too: one cgroup per open sandbox.

rlimits do not hold a hostile root (the kernel exempts it from RLIMIT_NPROC,
and nothing rlimit-shaped caps memory), cgroups do. Each sandbox gets a cgroup
under sprout's own, in every hierarchy that has one of the controllers: cgroup
v2 where it has them delegated to sprout's cgroup, v1 controllers (`memory`,
`pids`, `cpu`) where they are mounted there instead. The sandbox's launcher
(launcher.py) joins them once and starts every call from inside, so every process
of every call is inside (the call's init checks it before it starts the command);
the sandbox's cgroup namespace then shows that cgroup as "/".

Going over a limit is an ordinary failure inside: the kernel's OOM killer ends
the process that allocated (exit 137), `fork` fails with EAGAIN.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from sprout.sandbox.jail.processes import process_alive

CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000
NAME_PATTERN = re.compile(r"^sprout-(\d+)-[0-9a-f]+$")
REMOVE_TIMEOUT_S = 5.0
"""How long removal waits for a killed call's processes to leave (the kernel frees them
asynchronously)."""


@dataclass(frozen=True)
class CgroupLimits:
    """What a sandbox's cgroup allows; 0 means no limit."""

    memory_bytes: int
    pids: int
    cpus: float


@dataclass(frozen=True)
class CgroupSupport:
    """Where sandbox cgroups are made on this machine, and what is missing."""

    parents: dict[str, str] = field(default_factory=dict)
    """Controller -> the cgroup directory under which sandbox cgroups are made."""
    versions: dict[str, Literal[1, 2]] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    """Controller -> why it cannot be used."""

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(c for c in CONTROLLERS if c not in self.parents)

    def describe(self) -> str:
        """One line: which version serves which controller, and what is missing."""
        found = [f"{c} (v{self.versions[c]})" for c in CONTROLLERS if c in self.parents]
        text = ", ".join(found) or "none"
        if self.problems:
            text += "; " + "; ".join(f"{c}: {why}" for c, why in self.problems.items())
        return text


@dataclass(frozen=True)
class _Mount:
    root: str
    point: str
    kind: str
    options: frozenset[str]


def _unescape(text: str) -> str:
    """mountinfo writes spaces and the like in paths as octal escapes."""
    return re.sub(r"\\(\d{3})", lambda match: chr(int(match.group(1), 8)), text)


def _mounts(mountinfo: str) -> list[_Mount]:
    found = []
    for line in mountinfo.splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3 or not tail[0].startswith("cgroup"):
            continue
        options = frozenset(tail[2].split(","))
        found.append(_Mount(_unescape(fields[3]), _unescape(fields[4]), tail[0], options))
    return found


def _own_paths(proc_cgroup: str) -> dict[str, str]:
    """Hierarchy key (a v1 controller, or "" for v2) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            paths[controller] = parts[2]
    return paths


def _directory(mount: _Mount, own: str) -> str | None:
    """Where cgroup path `own` lives under `mount` (None when the mount does not reach it)."""
    root = mount.root.rstrip("/")
    if root and not (own == root or own.startswith(root + "/")):
        return None
    return os.path.join(mount.point, own[len(root) :].lstrip("/"))


def _v2_parent(directory: str, controller: str) -> str | None:
    """Why `controller` cannot be given to children of v2 cgroup `directory`, or None."""
    try:
        with open(os.path.join(directory, "cgroup.controllers"), encoding="ascii") as handle:
            if controller not in handle.read().split():
                return f"not enabled in {directory} (cgroup v2)"
        subtree = os.path.join(directory, "cgroup.subtree_control")
        with open(subtree, encoding="ascii") as handle:
            if controller in handle.read().split():
                return None
        with open(subtree, "w", encoding="ascii") as handle:
            handle.write(f"+{controller}")
        return None
    except OSError as error:
        if error.errno == errno.EBUSY:
            return (
                f"not delegated: {directory} holds processes, so cgroup v2 cannot give its "
                "children controllers; start sprout in a delegated cgroup "
                "(systemd-run --scope -p Delegate=yes ...)"
            )
        return f"{directory}: {error.strerror}"


def probe_support(mountinfo: str, proc_cgroup: str) -> CgroupSupport:
    """Which hierarchy serves each controller for this process (from its two /proc files)."""
    mounts = _mounts(mountinfo)
    own = _own_paths(proc_cgroup)
    support = CgroupSupport()
    for controller in CONTROLLERS:
        v1 = next((m for m in mounts if m.kind == "cgroup" and controller in m.options), None)
        if v1 is not None and controller in own:
            directory = _directory(v1, own[controller])
            if directory and os.access(directory, os.W_OK):
                support.parents[controller] = directory
                support.versions[controller] = 1
                continue
            support.problems[controller] = f"{directory or v1.point}: not writable (cgroup v1)"
            continue
        v2 = next((m for m in mounts if m.kind == "cgroup2"), None)
        if v2 is None or "" not in own:
            support.problems[controller] = "no cgroup hierarchy has it"
            continue
        directory = _directory(v2, own[""])
        problem = (
            "outside the cgroup2 mount" if directory is None else _v2_parent(directory, controller)
        )
        if problem is None and directory is not None:
            support.parents[controller] = directory
            support.versions[controller] = 2
        else:
            support.problems[controller] = problem or "unavailable"
    return support


@cache
def support() -> CgroupSupport:
    """This machine's cgroup support for sandboxes, probed once; stale cgroups of dead sprout
    processes are removed on the way."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            mountinfo = handle.read()
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            proc_cgroup = handle.read()
    except OSError:
        return CgroupSupport(problems={c: "no /proc" for c in CONTROLLERS})
    found = probe_support(mountinfo, proc_cgroup)
    for parent in set(found.parents.values()):
        sweep_stale(parent)
    return found


def sweep_stale(parent: str) -> None:
    """Remove sandbox cgroups that a killed sprout process left under `parent`."""
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            match = NAME_PATTERN.match(name)
            if match and not process_alive(int(match.group(1))):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(parent, name))


def _write(directory: str, name: str, value: str) -> None:
    with open(os.path.join(directory, name), "w", encoding="ascii") as handle:
        handle.write(value)


def _limit_files(controller: str, version: int, limits: CgroupLimits) -> list[tuple[str, str]]:
    """(file, value) pairs that set `limits` for one controller, in the order they must go."""
    if controller == "memory":
        if not limits.memory_bytes:
            return []
        if version == 2:
            return [("memory.max", str(limits.memory_bytes)), ("memory.swap.max", "0")]
        value = str(limits.memory_bytes)
        return [("memory.limit_in_bytes", value), ("memory.memsw.limit_in_bytes", value)]
    if controller == "pids":
        return [("pids.max", str(limits.pids) if limits.pids else "max")]
    quota = int(limits.cpus * CPU_PERIOD_US) if limits.cpus else 0
    if version == 2:
        return [("cpu.max", f"{quota or 'max'} {CPU_PERIOD_US}")]
    return [("cpu.cfs_period_us", str(CPU_PERIOD_US)), ("cpu.cfs_quota_us", str(quota or -1))]


class SandboxCgroup:
    """The cgroup directories of one open sandbox (one per hierarchy)."""

    def __init__(self, name: str, found: CgroupSupport) -> None:
        self.name = name
        self.found = found
        self.directories: list[str] = []

    @classmethod
    def create(cls, limits: CgroupLimits | None, found: CgroupSupport) -> SandboxCgroup:
        """A fresh cgroup under sprout's own in each hierarchy, with `limits` set; None sets
        none yet, for a spare (backends/spares.py) whose sandbox sets its own (`limit`)."""
        group = cls(f"sprout-{os.getpid()}-{secrets.token_hex(4)}", found)
        try:
            for parent in dict.fromkeys(found.parents.values()):  # a v2 hierarchy serves several
                os.mkdir(os.path.join(parent, group.name))
                group.directories.append(os.path.join(parent, group.name))
            if limits is not None:
                group.limit(limits)
        except BaseException:
            group.remove()
            raise
        return group

    def limit(self, limits: CgroupLimits) -> None:
        """Write `limits`, before anything of the sandbox's runs inside (its launcher alone
        may be there: it runs nothing until its sandbox's first call)."""
        for controller in CONTROLLERS:
            parent = self.found.parents.get(controller)
            if parent is None:
                continue
            directory = os.path.join(parent, self.name)
            for file, value in _limit_files(controller, self.found.versions[controller], limits):
                if file == "memory.memsw.limit_in_bytes" or file == "memory.swap.max":
                    with contextlib.suppress(FileNotFoundError):  # no swap accounting
                        _write(directory, file, value)
                    continue
                _write(directory, file, value)

    def remove(self) -> None:
        """Remove the directories, waiting briefly for a killed call's processes to go."""
        deadline = time.monotonic() + REMOVE_TIMEOUT_S
        for directory in self.directories:
            while True:
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError as error:
                    if error.errno != errno.EBUSY or time.monotonic() > deadline:
                        break  # left for the next start's sweep
                    time.sleep(0.01)
        self.directories = []
