"""Request and result types that cross the sandbox boundary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ChangeKind = Literal["added", "modified", "deleted"]


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


@dataclass(frozen=True)
class Change:
    """One path that differs between a checkpoint and the sandbox's current state."""

    path: str
    """Absolute path inside the sandbox."""
    kind: ChangeKind
    size: int
    """Size now in bytes (0 for a deletion)."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for each call; 0 leaves a limit as inherited.

    The defaults stop a runaway build or fork bomb without getting in the way of
    ordinary installs and test runs.
    """

    processes: int = 4096
    """RLIMIT_NPROC (not enforced for root, which the kernel exempts)."""
    file_size: int = 16 * 1024**3
    """RLIMIT_FSIZE in bytes: the largest single file a call may write."""
    cpu_seconds: int = 3600
    """RLIMIT_CPU per process."""
    open_files: int = 4096
    """RLIMIT_NOFILE."""
    output_bytes: int = 64 * 1024
    """Cap on the output kept per call; head and tail are kept, the middle is cut."""

    def __post_init__(self) -> None:
        for name in ("processes", "file_size", "cpu_seconds", "open_files", "output_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"limits.{name}: expected a non-negative int, got {value!r}")
        if self.output_bytes < 64:
            raise ValueError(f"limits.output_bytes: at least 64, got {self.output_bytes}")


@dataclass(frozen=True)
class SandboxConfig:
    """Everything a fork needs to rebuild a sandbox from a checkpoint id alone."""

    image: str
    """"host" or the absolute path of a root-filesystem directory."""
    workdir: str
    env: dict[str, str] = field(default_factory=dict)
    network: bool = True
    limits: Limits = field(default_factory=Limits)

    def to_json(self) -> dict[str, object]:
        return {
            "image": self.image,
            "workdir": self.workdir,
            "env": dict(self.env),
            "network": self.network,
            "limits": self.limits.__dict__.copy(),
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> SandboxConfig:
        env = data.get("env") or {}
        limits = data.get("limits") or {}
        assert isinstance(env, dict) and isinstance(limits, dict)
        return cls(
            image=str(data["image"]),
            workdir=str(data["workdir"]),
            env={str(k): str(v) for k, v in env.items()},
            network=bool(data.get("network", True)),
            limits=Limits(**{str(k): int(v) for k, v in limits.items()}),
        )
