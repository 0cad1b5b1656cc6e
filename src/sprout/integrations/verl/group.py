"""Where the `n` samples of one prompt meet: one task's group, played once, read `n` times.

verl calls an agent loop's `run` once per sample, and splits a step's samples between its
AgentLoopWorkers (Ray actors, on any node) in chunks that may cut a prompt's `n` samples in
two; the sample's place among them is not passed to `run`, and verl's own numbering
(`get_trajectory_info`) restarts in each chunk. So the samples of a prompt meet at a named
Ray actor, one per verl `uid` (one prompt of one step), which hands out slots 0..n-1 in the
order the samples claim them. The sample that claims slot 0 leads: its process plays the
whole group, so the group's sandboxes live on that worker's node and every model call goes
through that worker's `server_manager`. Every sample, the leader too, then waits for its
slot's output and, once it has it, says so; the actor ends itself at the last of those.
(Ending it from the sample that took the last output lost the replies still on their way
to the others: Ray drops what a killed actor has not sent yet.)

A leader that fails publishes the failure for every slot (an error, never a reward); a
leader whose process dies takes the actor with it (a Ray actor dies with the process that
made it), and the samples waiting on it end in error too.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import ray

NAMESPACE = "sprout"
"""The Ray namespace of the rendezvous actors, apart from the job's own."""


@dataclass(frozen=True)
class Slot:
    """A sample's place in its group."""

    index: int
    leads: bool
    """True for the one sample whose process plays the group."""


class GroupRendezvous:
    """The state the samples of one prompt share: slots claimed, outputs once played."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.claimed = 0
        self.received = 0
        self.outputs: list[dict[str, Any]] | None = None
        self.played = asyncio.Event()

    async def claim(self) -> int:
        """The next free slot; -1 when all `size` are claimed (verl sent more samples)."""
        if self.claimed >= self.size:
            return -1
        self.claimed += 1
        return self.claimed - 1

    async def publish(self, outputs: list[dict[str, Any]]) -> None:
        """The group's outputs, one per slot, from the leader."""
        self.outputs = outputs
        self.played.set()

    async def output(self, slot: int) -> dict[str, Any]:
        """Slot `slot`'s output, once the group is played."""
        await self.played.wait()
        assert self.outputs is not None
        return self.outputs[slot]

    async def received_one(self) -> None:
        """A sample has its output; at the last one this actor ends, every reply delivered."""
        self.received += 1
        if self.received == self.size:
            ray.actor.exit_actor()  # type: ignore[no-untyped-call]


_Remote = ray.remote(num_cpus=0)(GroupRendezvous)


class Group:
    """One sample's handle on its prompt's rendezvous (see the module docstring)."""

    def __init__(self, uid: str, size: int) -> None:
        self.uid = uid
        self.size = size
        self._actor: Any = _Remote.options(
            name=f"group-{uid}", namespace=NAMESPACE, get_if_exists=True
        ).remote(size)

    async def claim(self) -> Slot | None:
        """This sample's slot; None when the prompt already has `size` samples."""
        index = await self._actor.claim.remote()
        return None if index < 0 else Slot(index, leads=index == 0)

    async def publish(self, outputs: list[dict[str, Any]]) -> None:
        await self._actor.publish.remote(outputs)

    async def output(self, slot: Slot) -> dict[str, Any]:
        """The output of `slot`, waiting for the leader to play the group; then the actor
        hears it arrived (not waited for: its last such call ends it)."""
        found = await self._actor.output.remote(slot.index)
        self._actor.received_one.remote()
        return dict(found)
