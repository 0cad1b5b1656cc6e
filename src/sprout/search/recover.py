"""What a search does with an attempt whose checkpoint was lost with its node.

The tree still holds every turn the attempt's context holds, so its checkpoint is first
rebuilt by running the path's recorded calls again from checkpoint 0
(`sprout.sandbox.replay`): when every call exits as recorded, the attempt continues from
its last turn as if nothing happened. When one does not, the state cannot be trusted: a
root is restarted from checkpoint 0 by a new root that names it (`Attempt.restarts`), and
a branch (whose fork point is on the same lost path) ends in error, never as a failed test.
Every rebuild is recorded in the run's meta (`rebuilt`), with what it ran and how it ended.
"""

from __future__ import annotations

import threading
import time

from sprout.sandbox import Rebuilt, ReplayCall, ReplayTurn
from sprout.search.state import SearchState
from sprout.tree import Attempt, RebuiltCheckpoint, RolloutTree, RunMeta

_recording = threading.Lock()


def rebuild(search: SearchState, attempt: Attempt, why: str = "was lost with its node") -> Rebuilt:
    """Rebuild `attempt`'s path in its task's sandboxes, said (with `why` its checkpoint is
    not there) and recorded."""
    tree = search.tree
    old_base_checkpoint = tree.root_of(attempt).base_checkpoint
    assert old_base_checkpoint is not None, "a root always records checkpoint 0"
    rebuilt = search.sandboxes.rebuild(
        search.task,
        search.base_checkpoint,
        old_base_checkpoint,
        replay_turns(tree, attempt),
        search.actor.config.call_timeout_s,
    )
    with _recording:
        done = RebuiltCheckpoint(
            attempt=attempt.id,
            checkpoint=tree.checkpoint(attempt),
            calls=rebuilt.calls,
            differed=rebuilt.differed,
            diverged=rebuilt.diverged,
            at=time.time(),
        )
        tree.update_meta(RunMeta(rebuilt=[*tree.meta().rebuilt, done]))
    search.progress.event(
        search.task.id,
        search.method.name,
        f"attempt {attempt.id}'s checkpoint {why}: {rebuilt.describe()}",
    )
    return rebuilt


def recover(search: SearchState, lost: Attempt) -> Attempt:
    """The attempt to go on with in place of `lost`: itself, running again on its rebuilt
    checkpoint; a new root when a root's could not be rebuilt; else `lost`, still an error
    whose reason says why the rebuild failed."""
    rebuilt = rebuild(search, lost)
    if rebuilt.diverged is None:
        search.tree.reopen_attempt(lost.id)
        return search.tree.attempt(lost.id)
    reason = f"{lost.end_reason}; {rebuilt.describe()}"
    search.tree.finish_attempt(lost.id, "error", reason, fault="lost")
    if lost.kind == "root":
        return restart(search, search.tree.attempt(lost.id))
    return search.tree.attempt(lost.id)


def restart(search: SearchState, lost: Attempt) -> Attempt:
    """A new root in place of `lost`, from checkpoint 0: the lost root's turns stay in the
    tree as they were recorded, and its outcome is said once."""
    search.progress.attempt_done(lost, len(search.tree.own_turns(lost)))
    root = search.tree.root(
        search.task.id,
        search.prefix,
        search.base_checkpoint,
        method=search.method.name,
        restarts=lost.id,
    )
    search.progress.event(
        search.task.id,
        search.method.name,
        f"attempt {lost.id} restarted from checkpoint 0 as attempt {root.id}",
    )
    return root


def replay_turns(tree: RolloutTree, attempt: Attempt) -> list[ReplayTurn]:
    """The turns of `attempt`'s path from checkpoint 0, as a rebuild replays them."""
    return [
        ReplayTurn(
            turn.checkpoint,
            tuple(ReplayCall(c.command, c.exit_code, c.timed_out, c.output) for c in turn.calls),
        )
        for turn in tree.path(attempt)
    ]
