"""Rebuilding lost checkpoints by running their recorded calls again from checkpoint 0.

A checkpoint is lost when the only store that held it went with its node (a disk of its
own). Its attempt's turns are still in the run's tree: every call's command, exit code and
output. Playing those calls again, in order, on a fork of this store's checkpoint 0, and
sealing each turn under its old id, gives back a state the attempt's context agrees with:
the same exit codes call by call (required) and, as far as the commands are
deterministic, the same output (outputs that differ are counted, never hidden). Forks,
branches and the verifier then find the old ids as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sprout.sandbox.errors import UnknownCheckpoint
from sprout.sandbox.layers.store import LayerStore
from sprout.sandbox.sandbox import Sandbox


@dataclass(frozen=True)
class ReplayCall:
    """One recorded shell call: what ran, and what it left behind then."""

    command: str
    exit_code: int | None
    timed_out: bool
    output: str


@dataclass(frozen=True)
class ReplayTurn:
    """One turn on the path to a lost checkpoint: its calls and the checkpoint it sealed."""

    checkpoint: str
    calls: tuple[ReplayCall, ...]


@dataclass(frozen=True)
class Rebuilt:
    """What a rebuild did: calls run again, how many printed otherwise than recorded, and
    why it stopped short (an exit code that differed), or None when every layer is back."""

    calls: int
    differed: int
    diverged: str | None

    def describe(self) -> str:
        if self.diverged is not None:
            return f"could not be rebuilt: {self.diverged}"
        printed = f"; {self.differed} printed otherwise" if self.differed else ""
        return f"rebuilt from checkpoint 0 by running {self.calls} recorded calls again{printed}"


def rebuild(
    store: LayerStore,
    base_checkpoint: str,
    old_base_checkpoint: str,
    turns: Sequence[ReplayTurn],
    timeout: float,
    have: Callable[[str], bool],
) -> Rebuilt:
    """Make the checkpoints of `turns` (a path from checkpoint 0, oldest first) `store`'s
    again under their ids: from the deepest one `have` finds (it may adopt or ship it),
    else from `base_checkpoint` (this store's checkpoint 0; `old_base_checkpoint` is the
    path's own, which is sealed as an empty layer over `base_checkpoint` when the store lacks
    it). Each call runs with `timeout`; an exit code that differs from the record stops the
    rebuild there.

    The run's tree recorded these checkpoints before they existed here, so the rebuild
    returns only once what it sealed is on disk (`LayerStore.wait_durable`), as the tree
    would have waited for them."""
    start = next((i for i in range(len(turns), 0, -1) if have(turns[i - 1].checkpoint)), 0)
    parent = (
        turns[start - 1].checkpoint
        if start
        else _base_checkpoint_as(store, base_checkpoint, old_base_checkpoint, have)
    )
    rebuilt, last = _replay(store, parent, turns[start:], start, timeout)
    store.wait_durable(last)  # and all it stacks on
    return rebuilt


def _replay(
    store: LayerStore, parent: str, turns: Sequence[ReplayTurn], skipped: int, timeout: float
) -> tuple[Rebuilt, str]:
    """Run the calls of `turns` (those after the first `skipped` of the path) again on
    `parent`, sealing each turn under its id: what it did, and the last checkpoint sealed."""
    ran = differed = 0
    for number, turn in enumerate(turns, start=skipped + 1):
        if turn.checkpoint == parent:  # a turn that wrote nothing sealed no layer
            continue
        with Sandbox.fork(store, parent, upper=turn.checkpoint) as sandbox:
            for call in turn.calls:
                seen = sandbox.run(call.command, timeout=timeout)
                ran += 1
                if (seen.exit_code, seen.timed_out) != (call.exit_code, call.timed_out):
                    return Rebuilt(ran, differed, _diverged(number, call, seen.exit_code)), parent
                differed += seen.output != call.output
            parent = sandbox.checkpoint(always=True)
    return Rebuilt(ran, differed, None), parent


def sealed_in(store: LayerStore) -> Callable[[str], bool]:
    """`have` for a rebuild in `store` alone: whether it holds a checkpoint sealed."""

    def have(checkpoint: str) -> bool:
        try:
            store.layer(checkpoint)
        except UnknownCheckpoint:
            return False
        return True

    return have


def _base_checkpoint_as(
    store: LayerStore, base_checkpoint: str, old_base_checkpoint: str, have: Callable[[str], bool]
) -> str:
    """`old_base_checkpoint` in `store`: its own, or an empty layer of that id over
    `base_checkpoint` (the same task's checkpoint 0, built on this node)."""
    if old_base_checkpoint == base_checkpoint or have(old_base_checkpoint):
        return old_base_checkpoint
    with Sandbox.fork(store, base_checkpoint, upper=old_base_checkpoint) as sandbox:
        return sandbox.checkpoint(always=True)


def _diverged(number: int, call: ReplayCall, exit_code: int | None) -> str:
    said = "timed out" if exit_code is None else f"exited {exit_code}"
    was = "timed out" if call.timed_out else f"exited {call.exit_code}"
    return f"turn {number}: `{call.command[:80]}` {said}, recorded as {was}"
