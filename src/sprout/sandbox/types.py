"""Request and result types that cross the sandbox boundary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sprout.sandbox.network.policy import Network


@dataclass(frozen=True)
class Observation:
    """What one shell call left behind, as the agent will see it."""

    output: str
    """stdout and stderr interleaved in the order they were written (one pipe)."""
    exit_code: int | None
    """None when the call timed out; 128+N when signal N ended the command."""
    timed_out: bool
    duration_s: float
    truncated: bool
    """True when the middle of the output was cut to keep it under the cap."""
    output_bytes: int = 0
    """How many bytes the command wrote in total, before any cut."""


GIB = 1024**3


@dataclass(frozen=True)
class Limits:
    """Resource limits of a sandbox; 0 leaves a limit off.

    The defaults suit software-engineering tasks (an install, a build, a test
    run) and stop a runaway build, a fork bomb or a disk filler before it
    starves the machine. `processes`, `memory_bytes` and `cpus` bind through the
    sandbox's cgroup, for root inside too; `disk_bytes` binds where the store's
    filesystem can cap a directory (`sprout doctor` says whether it can).
    """

    processes: int = 4096
    """Processes and threads at once (the cgroup's pids.max, and RLIMIT_NPROC)."""
    memory_bytes: int = 4 * GIB
    """Memory of all the sandbox's processes together, page cache included (no swap)."""
    cpus: float = 2.0
    """CPU time per wall-clock second, in CPUs (the cgroup's CPU quota)."""
    disk_bytes: int = 10 * GIB
    """Bytes the sandbox's unsealed layer may hold."""
    file_size: int = 16 * GIB
    """RLIMIT_FSIZE in bytes: the largest single file a call may write."""
    cpu_seconds: int = 3600
    """RLIMIT_CPU per process."""
    open_files: int = 4096
    """RLIMIT_NOFILE."""
    output_bytes: int = 64 * 1024
    """Cap on the output kept per call; head and tail are kept, the middle is cut."""
    command_bytes: int = 1024 * 1024
    """The largest command one call takes, in UTF-8 bytes; a bigger one is refused
    (BadArgument) before anything runs. The shell reads it as a script, never from its
    command line, so the kernel's 128 KiB argument limit plays no part."""

    def __post_init__(self) -> None:
        for name in (
            "processes", "memory_bytes", "disk_bytes", "file_size", "cpu_seconds",
            "open_files", "output_bytes", "command_bytes",
        ):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"limits.{name}: expected a non-negative int, got {value!r}")
        cpus = self.cpus
        if not isinstance(cpus, int | float) or isinstance(cpus, bool) or not 0 <= cpus <= 4096:
            raise ValueError(f"limits.cpus: expected a number of CPUs from 0 to 4096, got {cpus!r}")
        if self.output_bytes < 64:
            raise ValueError(f"limits.output_bytes: at least 64, got {self.output_bytes}")

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Limits:
        """Limits as `to_json` wrote them; fields an older store lacks take today's defaults."""
        values: dict[str, Any] = {}
        for name in cls.__dataclass_fields__:
            value = data.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                values[name] = float(value) if name == "cpus" else int(value)
        return cls(**values)


@dataclass(frozen=True)
class RunAs:
    """Who a sandbox's commands run as when not its root: numeric ids, as the image's own
    /etc/passwd and /etc/group give them (the sandbox reads no names), as `docker exec`
    runs a container's commands as the image's USER."""

    uid: int
    gid: int
    groups: tuple[int, ...] = ()
    """Supplementary groups (the primary one included, as Docker lists it)."""
    name: str = ""
    """The passwd name, "" for an id the image does not name: USER and LOGNAME."""
    home: str = "/"
    """HOME, from the passwd entry ("/" without one, as Docker has it)."""

    def __post_init__(self) -> None:
        for value in (self.uid, self.gid, *self.groups):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**32 - 1:
                raise ValueError(f"user: expected ids from 0 to 2**32-2, got {value!r}")
        if not isinstance(self.home, str) or not self.home.startswith("/"):
            raise ValueError(f"user.home: expected an absolute path, got {self.home!r}")

    def env(self) -> dict[str, str]:
        """The variables that name the user: HOME (as Docker sets it), USER and LOGNAME (as a
        login sets them, for the tools that read them instead of the passwd file)."""
        named = {"USER": self.name, "LOGNAME": self.name} if self.name else {}
        return {"HOME": self.home, **named}

    def to_json(self) -> dict[str, object]:
        return {
            "uid": self.uid,
            "gid": self.gid,
            "groups": list(self.groups),
            "name": self.name,
            "home": self.home,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RunAs:
        groups = data.get("groups") or []
        uid, gid = data["uid"], data["gid"]
        assert isinstance(groups, list) and isinstance(uid, int) and isinstance(gid, int)
        return cls(
            uid=uid,
            gid=gid,
            groups=tuple(int(g) for g in groups),
            name=str(data.get("name", "")),
            home=str(data.get("home", "/")),
        )


@dataclass(frozen=True)
class SandboxConfig:
    """Everything a fork needs to rebuild a sandbox from a checkpoint id alone."""

    image: str
    """"host" or the absolute path of a root-filesystem directory."""
    workdir: str
    env: dict[str, str] = field(default_factory=dict)
    network: Network = True
    """True: `public`; False: `none`; the hosts of an `allowlist` (sandbox/network/namespace.py)."""
    limits: Limits = field(default_factory=Limits)
    user_namespaces: bool = False
    """Let commands make user namespaces of their own (and mount inside them), as a task
    that runs containers needs; off, seccomp refuses them, as container engines do."""
    user: RunAs | None = None
    """Who the commands run as; None: the sandbox's root."""

    def to_json(self) -> dict[str, object]:
        return {
            "image": self.image,
            "workdir": self.workdir,
            "env": dict(self.env),
            "network": self.network if isinstance(self.network, bool) else list(self.network),
            "limits": self.limits.__dict__.copy(),
            "user_namespaces": self.user_namespaces,
            "user": self.user.to_json() if self.user is not None else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> SandboxConfig:
        env = data.get("env") or {}
        limits = data.get("limits") or {}
        user = data.get("user")
        assert isinstance(env, dict) and isinstance(limits, dict)
        assert user is None or isinstance(user, dict)
        return cls(
            image=str(data["image"]),
            workdir=str(data["workdir"]),
            env={str(k): str(v) for k, v in env.items()},
            network=_network_of(data.get("network", True)),
            limits=Limits.from_json({str(k): v for k, v in limits.items()}),
            user_namespaces=bool(data.get("user_namespaces", False)),
            user=RunAs.from_json(user) if user is not None else None,
        )


def _network_of(saved: object) -> Network:
    """A saved `network`: a boolean, or the list of an allow-list's hosts."""
    if isinstance(saved, list):
        return tuple(str(host) for host in saved)
    return bool(saved)
