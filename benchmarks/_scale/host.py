"""What this machine holds for the benchmark, counted on the host: its processes, their CPU
time and memory, file descriptors, mounts, cgroups and inodes.

Everything is read from /proc and the cgroup filesystems, so the counts do not depend on
what sprout thinks it made.
"""

import os
import resource
import time
from collections.abc import Collection
from dataclasses import dataclass

from sprout.sandbox.jail import cgroups

TICK_S = 1 / os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name (which may hold spaces), or None once gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def descendants(root: int | None = None) -> list[int]:
    """Every live process below `root` (default this one), from the host's process table."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _stat_fields(int(name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(name))
    found, queue = [], [root]
    while queue:
        below = children.get(queue.pop(), [])
        found += below
        queue += below
    return found


@dataclass(frozen=True)
class Cpu:
    """CPU seconds of this process tree: this process, its reaped children, and every live
    descendant with the children it reaped (a sandbox's launcher reaps its calls)."""

    user_s: float
    system_s: float

    @property
    def total_s(self) -> float:
        return self.user_s + self.system_s

    def __sub__(self, other: "Cpu") -> "Cpu":
        return Cpu(self.user_s - other.user_s, self.system_s - other.system_s)


def cpu() -> Cpu:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = own.ru_utime + reaped.ru_utime, own.ru_stime + reaped.ru_stime
    for pid in descendants():
        fields = _stat_fields(pid)
        if fields is not None:  # utime stime cutime cstime, in clock ticks
            user += (int(fields[11]) + int(fields[13])) * TICK_S
            system += (int(fields[12]) + int(fields[14])) * TICK_S
    return Cpu(user, system)


def machine_ticks() -> tuple[int, int]:
    """Busy and total clock ticks of all this machine's CPUs so far (/proc/stat): what
    every process spent, this benchmark's and any other work's."""
    with open("/proc/stat", encoding="ascii") as handle:
        fields = [int(value) for value in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


def machine_cpus_busy(before: tuple[int, int], after: tuple[int, int]) -> float:
    """How many of the machine's CPUs were busy between two `machine_ticks`, on average."""
    busy, total = after[0] - before[0], after[1] - before[1]
    return (os.cpu_count() or 1) * busy / total if total else 0.0


def own_cpu_s() -> float:
    """CPU seconds of this process alone (its Python threads: bounded by one CPU's worth of
    bytecode at a time)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def pss_bytes() -> int:
    """Proportional set size of this process and its descendants: shared pages counted once
    over all of them, so the sum is what they hold together."""
    total = 0
    for pid in [os.getpid(), *descendants()]:
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
                for line in handle:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return total


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def mounts_under(folder: str) -> list[str]:
    """Mount points of the host's mount table in `folder`, and overlays whose options name
    it (a call's overlay lives in its own namespace: one here would be a leak)."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if fields[4].startswith(folder) or folder in line.partition(" - ")[2]:
                found.append(fields[4])
    return found


def mount_count() -> int:
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        return sum(1 for _ in handle)


def sandbox_cgroups() -> list[str]:
    """The sandbox cgroups this process has made, in every hierarchy (cgroups.py names them
    sprout-PID-...)."""
    prefix = f"sprout-{os.getpid()}-"
    found = []
    for parent in set(cgroups.support().parents.values()):
        found += [os.path.join(parent, n) for n in os.listdir(parent) if n.startswith(prefix)]
    return found


def charged_memory_bytes(directories: list[str]) -> int:
    """What the sandboxes' memory cgroups among `directories` hold (page cache and kernel
    memory included), as the kernel charges it."""
    total = 0
    for directory in directories:
        for name in ("memory.usage_in_bytes", "memory.current"):
            path = os.path.join(directory, name)
            if os.path.exists(path):
                with open(path, encoding="ascii") as handle:
                    total += int(handle.read())
                break
    return total


def inodes(folder: str) -> int:
    """Files, folders and links under `folder` (what a store spends of its filesystem's
    inodes)."""
    count = 0
    for _, folders, files in os.walk(folder):
        count += len(folders) + len(files)
    return count


@dataclass(frozen=True)
class Holdings:
    """What this process tree holds at one moment."""

    processes: int
    fds: int
    pss_bytes: int
    cgroups: int
    charged_bytes: int

    def per(self, baseline: "Holdings", count: int) -> dict[str, float]:
        """The growth since `baseline`, per one of `count` sandboxes."""
        return {
            "processes": (self.processes - baseline.processes) / count,
            "fds": (self.fds - baseline.fds) / count,
            "pss_bytes": (self.pss_bytes - baseline.pss_bytes) / count,
            "cgroups": (self.cgroups - baseline.cgroups) / count,
            "charged_bytes": (self.charged_bytes - baseline.charged_bytes) / count,
        }


def started_since(before: Collection[int]) -> list[int]:
    """The processes below this one that `before` (a `descendants()` taken earlier) did not
    hold: what the benchmark started, not what its caller keeps running (a test process's
    Ray cluster, say)."""
    return [pid for pid in descendants() if pid not in before]


def settle(before: Collection[int], timeout_s: float = 5.0) -> None:
    """Wait (up to `timeout_s`) until no process started since `before` is left: a closed
    sandbox's network holder is killed and reaped by a thread of its own, a moment later,
    and a count taken before that would charge it to what comes next."""
    deadline = time.monotonic() + timeout_s
    while started_since(before) and time.monotonic() < deadline:
        time.sleep(0.05)


def holdings() -> Holdings:
    made = sandbox_cgroups()
    return Holdings(
        len(descendants()), open_fds(), pss_bytes(), len(made), charged_memory_bytes(made)
    )


def leftovers(
    folder: str, mounts_before: int, before: Collection[int], settle_s: float = 5.0
) -> dict[str, object]:
    """What is left once every sandbox has closed: processes below this one started since
    `before`, sandbox
    cgroups and mounts in `folder` (the stores' folder), each of which must be none, and
    the change in the host's mount count (which other work on a shared machine moves too).
    The kernel ends a killed process asynchronously, so this waits up to `settle_s`."""
    deadline = time.monotonic() + settle_s
    while True:
        found: dict[str, object] = {
            "processes": started_since(before),
            "cgroups": sandbox_cgroups(),
            "mounts": mounts_under(folder),
        }
        clean = not any(found.values())
        if clean or time.monotonic() > deadline:
            found["host_mount_count_change"] = mount_count() - mounts_before
            found["clean"] = clean
            return found
        time.sleep(0.1)
