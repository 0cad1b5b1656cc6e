"""A turn of commands another tool's agent ran in sprout's sandbox: what mini-swe-agent's
and Harbor's environments record per step. The environment sees the commands and their
output, never the model's reply, so the turn has no reply text and adds no messages."""

from __future__ import annotations

from collections.abc import Sequence

from sprout.tree import CallRecord, RolloutTree, Turn
from sprout.workspace import Sealed


def commit_command_turn(
    tree: RolloutTree,
    attempt_id: int,
    index: int,
    calls: Sequence[CallRecord],
    sealed: Sealed,
    duration_s: float,
) -> None:
    """Turn `index` of attempt `attempt_id`: `calls`, sealed as `sealed` (with the paths it
    changed, for the viewer's diffs)."""
    tree.commit_turn(
        Turn(
            attempt_id=attempt_id,
            index=index,
            author="actor",
            text="",
            calls=tuple(calls),
            messages=(),
            checkpoint=sealed.checkpoint,
            changes=sealed.changes,
            duration_s=duration_s,
        )
    )
