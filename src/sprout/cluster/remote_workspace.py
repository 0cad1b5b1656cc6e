"""The actor's `Workspace` on a Ray cluster: forks that live in a task's `TaskHost`.

The actor (sprout's, not Ray's) forks, runs and seals as on this machine; each verb
is one call to the actor holding the task's layers. The place is asked for at each
fork, so an attempt that starts after its task moved forks on the new node.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sprout.cluster.place import Place
from sprout.sandbox import Observation
from sprout.workspace import Sealed, WorkspaceError


class RemoteWorkspace:
    """Forks of the checkpoints of the task that `place()` holds; `sealed` is told where each
    checkpoint they seal lives (the driver settles it there before recording it)."""

    def __init__(self, place: Callable[[], Place], sealed: Callable[[str, Place], None]) -> None:
        self._place = place
        self._sealed = sealed

    @contextmanager
    def fork(self, checkpoint: str) -> Iterator[RemoteFork]:
        """A fork on the task's node, closed there after the block (when the node lives)."""
        place = self._place()
        fork_id = place.call("fork", checkpoint)
        try:
            yield RemoteFork(place, fork_id, self._sealed)
        finally:
            with contextlib.suppress(WorkspaceError):  # a dead node took the fork with it
                place.call("close", fork_id)


class RemoteFork:
    """One fork on a task's node, seen as a `sprout.workspace.Fork`."""

    def __init__(self, place: Place, fork_id: str, sealed: Callable[[str, Place], None]) -> None:
        self._place = place
        self._id = fork_id
        self._sealed = sealed

    def check_command(self, command: str) -> str | None:
        found: str | None = self._place.call("check_command", self._id, command)
        return found

    def run(self, command: str, timeout: float) -> Observation:
        found: Observation = self._place.call("run", self._id, command, timeout)
        return found

    def seal(self) -> Sealed:
        found: Sealed = self._place.call("seal", self._id)
        self._sealed(found.checkpoint, self._place)
        return found
