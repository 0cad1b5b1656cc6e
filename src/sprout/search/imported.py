"""Attempts played elsewhere, adopted as a method's roots (`sprout run --from-trajectories`).

Another tool's agent (mini-swe-agent, say) leaves its attempt as a trajectory: every
message, and every command with its output and exit code, but no filesystem. Adopted, the
attempt becomes a root of this run's tree with those turns, and its checkpoints are made
by the rule a checkpoint lost with its node is made again (`sprout.search.recover`): its
recorded calls run once more from checkpoint 0, each turn sealed under its own id, and
every exit code must be as recorded. No model call is replayed. An attempt that rebuilds
is then verified, analysed and branched like one sprout played; one that cannot (a
command that exits otherwise now) ends `error` with fault `lost` and is restarted from
checkpoint 0 by a new root, as a lost root would be.

The readers of each tool's files live in `sprout.integrations`; this module knows only
what they hand over.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from sprout.search.recover import rebuild, restart
from sprout.search.task_search import Search
from sprout.tree import (
    Attempt,
    AttemptStatus,
    CallRecord,
    Fault,
    ImportedAttempt,
    Message,
    RolloutTree,
    RunMeta,
    Turn,
)

_recording = threading.Lock()


@dataclass(frozen=True)
class ImportedTurn:
    """One turn of an adopted attempt: the reply, the calls that ran, the messages it added."""

    text: str
    calls: tuple[CallRecord, ...]
    messages: tuple[Message, ...]
    format_error: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class ImportedRoot:
    """One attempt played elsewhere, from checkpoint 0 of task `task_id`."""

    task_id: str
    source: str
    """The file it was read from, named in the run's meta and in what is said about it."""
    prefix: tuple[Message, ...]
    turns: tuple[ImportedTurn, ...]
    status: AttemptStatus
    """`running` when the trajectory stops before its agent ended: the actor continues it."""
    end_reason: str | None = None
    fault: Fault | None = None


def adopt(search: Search, imported: Sequence[ImportedRoot]) -> None:
    """`imported` as the roots of `search`'s method, when it has none yet (a resumed run
    keeps the ones it adopted), then the checkpoints of those not yet verified made in
    the task's sandboxes."""
    if imported and not any(a.kind == "root" for a in search.attempts()):
        for root in imported:
            _add(search, root)
    for attempt in _unchecked(search):
        with search.slots:  # a rebuild runs calls: it holds a sandbox's place like a turn
            rebuilt = rebuild(search, attempt, "was made by another tool")
        if rebuilt.diverged is not None:
            reason = f"imported from a trajectory that {rebuilt.describe()}"
            search.tree.finish_attempt(attempt.id, "error", reason, fault="lost")
            restart(search, search.tree.attempt(attempt.id))


def imported_sources(tree: RolloutTree) -> dict[int, str]:
    """The attempts of the run adopted from elsewhere, with the file each came from."""
    return {entry.attempt: entry.source for entry in tree.meta().imported}


def _unchecked(search: Search) -> list[Attempt]:
    """This method's adopted roots whose checkpoints may be missing: not verified yet and
    not ended by a fault (a root the actor continued is rebuilt only up to its own turns,
    which are found sealed)."""
    adopted = imported_sources(search.tree)
    return [
        a
        for a in search.attempts()
        if a.id in adopted and a.reward is None and a.status not in ("error", "stopped")
    ]


def _add(search: Search, root: ImportedRoot) -> Attempt:
    """The root, its turns committed with fresh checkpoint ids (no store holds them yet: the
    rebuild seals them), its end as the trajectory says, and its source in the meta."""
    tree = search.tree
    attempt = tree.root(
        root.task_id, list(root.prefix), search.base_checkpoint, method=search.method.name
    )
    checkpoint = search.base_checkpoint
    for index, turn in enumerate(root.turns, start=1):
        if turn.calls:  # a turn that ran nothing leaves the checkpoint before it
            checkpoint = secrets.token_hex(5)
        tree.commit_turn(
            Turn(
                attempt_id=attempt.id,
                index=index,
                author="actor",
                text=turn.text,
                calls=turn.calls,
                messages=turn.messages,
                checkpoint=checkpoint,
                prompt_tokens=turn.prompt_tokens,
                completion_tokens=turn.completion_tokens,
                format_error=turn.format_error,
            )
        )
    if root.status != "running":
        tree.finish_attempt(attempt.id, root.status, root.end_reason or "", fault=root.fault)
    with _recording:
        entry = ImportedAttempt(attempt=attempt.id, task=root.task_id, source=root.source)
        tree.update_meta(RunMeta(imported=[*tree.meta().imported, entry]))
    search.progress.event(
        root.task_id,
        search.method.name,
        f"attempt {attempt.id} imported from {root.source} ({len(root.turns)} turns, "
        f"{root.status})",
    )
    return tree.attempt(attempt.id)
