"""The actor's workspace on this machine: forks of a layer store's checkpoints.

A small adapter from `sprout.workspace.Workspace` (what the actor asks for) to
`Sandbox.fork` and `LayerStore`. Sealing also reads what the turn changed, from
the sealed layer alone (`checkpoint_changes`), so the tree records it with the
turn and nobody has to open the layers again to learn it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sprout.sandbox.errors import BadArgument, SandboxError
from sprout.sandbox.layers.changes import checkpoint_changes
from sprout.sandbox.layers.store import LayerStore
from sprout.sandbox.sandbox import Sandbox
from sprout.sandbox.types import Observation
from sprout.workspace import Sealed


class SandboxWorkspace:
    """Forks of `layers`' checkpoints, each a `Sandbox` with its own isolation."""

    def __init__(self, layers: LayerStore) -> None:
        self.layers = layers

    @contextmanager
    def fork(self, checkpoint: str) -> Iterator[SandboxFork]:
        """A sandbox over `checkpoint`, closed (its unsealed writes dropped) after the block."""
        with Sandbox.fork(self.layers, checkpoint) as sandbox:
            yield SandboxFork(sandbox)


class SandboxFork:
    """One `Sandbox` seen as a `sprout.workspace.Fork`."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def check_command(self, command: str) -> str | None:
        """Why the sandbox would refuse `command` (see `Sandbox.check_command`), or None."""
        try:
            self.sandbox.check_command(command)
        except BadArgument as error:
            return str(error).removeprefix("command: ")
        return None

    def run(self, command: str, timeout: float) -> Observation:
        return self.sandbox.run(command, timeout=timeout)

    def seal(self) -> Sealed:
        """The next checkpoint, and the paths it changed over the previous one (None when
        the layers cannot say: the turn is kept all the same)."""
        since = self.sandbox.parent
        checkpoint = self.sandbox.checkpoint()
        try:
            changes = tuple(checkpoint_changes(self.sandbox.store, since, checkpoint))
        except (SandboxError, OSError):
            return Sealed(checkpoint, None)
        return Sealed(checkpoint, changes)
