"""The workspace: what the actor needs of a sandbox, and nothing more.

The actor forks a checkpoint, checks and runs a turn's calls there, and seals
the result as the next checkpoint. `sprout.sandbox.SandboxWorkspace` does it
with overlay (or copy) layers on this machine; a remote sandbox, or an in-memory
fake in a test, is one more implementation of the same three verbs. This module
sits under both the agent and the sandbox, so neither imports the other. So do the two
things the rollout tree asks of whoever holds a run's layers: `Settle` (wait until a
checkpoint is on disk) and `ChangeReader` (what a checkpoint changed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

from sprout.errors import SproutError

ChangeKind = Literal["added", "modified", "deleted"]


class WorkspaceError(SproutError):
    """The workspace failed, not the model (a mount refused, a full disk): the actor ends
    the attempt `error` with fault `sandbox`, and `--resume` continues it."""


class CheckpointLost(WorkspaceError):
    """A checkpoint that no store can give back any more (its node died with its disk):
    the attempt that needed it ends `error` with fault `lost`, and is never continued,
    since there is nothing to continue from; a root is restarted from checkpoint 0."""


@dataclass(frozen=True)
class Change:
    """One path that differs between a checkpoint and a later state."""

    path: str
    """Absolute path inside the sandbox."""
    kind: ChangeKind
    size: int
    """Size now in bytes (0 for a deletion or a directory)."""


Settle = Callable[[str], None]
"""`checkpoint` -> once it (and all it stacks on) is on the disk of the store that sealed
it: a WorkspaceError when its flush failed or that store is gone. `RolloutTree.settle` is
one: the tree calls it before it records any checkpoint (a root's checkpoint 0, a turn's),
so that this one place, not each of the tree's callers (the actor, imported roots, the
integrations), makes sure a run never names a checkpoint that a crash of the machine could
lose, whoever sealed it and on whichever node."""
ChangeReader = Callable[[str, str], Sequence[Change] | None]
"""`(since, checkpoint)` -> what `checkpoint` changed over the earlier `since`, read from the
layers (None when they cannot say): for turns stored before their changes were recorded."""


@dataclass(frozen=True)
class Sealed:
    """A checkpoint just sealed, with what it changed over the one before."""

    checkpoint: str
    """The new checkpoint's id (the previous one's when nothing was written)."""
    changes: tuple[Change, ...] | None
    """The paths the turn added, modified or deleted; None when they could not be read."""


class CallOutput(Protocol):
    """What one call left behind, as the actor records it."""

    @property
    def output(self) -> str: ...
    @property
    def exit_code(self) -> int | None: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def duration_s(self) -> float: ...


class Fork(Protocol):
    """A writable state over a checkpoint, where a turn's calls run."""

    def check_command(self, command: str) -> str | None:
        """Why `run` would refuse `command` (a NUL byte, too long), or None; asked for every
        call of a turn before any of them runs."""
        ...

    def run(self, command: str, timeout: float) -> CallOutput:
        """Run `command`, killed at `timeout` seconds; raises WorkspaceError when the
        workspace, not the command, fails."""
        ...

    def seal(self) -> Sealed:
        """Seal what the calls since the last seal wrote as a new checkpoint; it may reach
        the disk later (the tree records it once it has: `Settle`)."""
        ...


class Workspace(Protocol):
    """Where an actor's calls run: forks of checkpoints."""

    def fork(self, checkpoint: str) -> AbstractContextManager[Fork]:
        """A fork of `checkpoint`, dropped (with anything not sealed) when the block ends."""
        ...
