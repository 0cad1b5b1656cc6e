"""One turn of a run in full, for the episode viewer: its text, each call with its
output, its tokens, and the files its layer changed with their diffs, read from the
layers (nothing runs, nothing is written)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sprout.edits import is_noise
from sprout.runfolder import RunFolder, RunFolderError
from sprout.sandbox import LayerStore, SandboxError, checkpoint_changes
from sprout.tree import Attempt, CallRecord, Change, TreeError, Turn
from sprout.verify.runner import file_diff
from sprout.viewer.data import ViewerError


def turn_detail(
    run: RunFolder,
    attempt_id: int,
    index: int,
    *,
    max_output_chars: int = 20000,
    max_diff_chars: int = 20000,
    path: Sequence[Turn] | None = None,
) -> dict[str, Any]:
    """Turn `index` on attempt `attempt_id`'s path in full: its text, each call with its
    output, its tokens, and the files its layer changed.

    An inherited index (at or below a branch's boundary) resolves to the ancestor's turn;
    `owner` says whose it is. Outputs and diffs longer than the caps are cut, and the
    number of characters left out is given (`"cut"`, `"diff_cut"`), so the page marks the
    cut instead of silently showing less. Files are the changes from the previous
    checkpoint on the path to this turn's, as recorded when the turn was sealed (read from
    the sealed layers for turns stored before that; nothing runs), with diffs read from
    the layers; caches and git bookkeeping (`sprout.edits.is_noise`) are listed apart
    under `noise`.
    `path`, the attempt's `RolloutTree.path`, saves rebuilding it for every turn of an
    attempt (report.html details them all).
    """
    turn, since = _turn_on_path(run, attempt_id, index, path)
    owner = run.tree.attempt(turn.attempt_id)
    calls = [_call_detail(call, max_output_chars) for call in turn.calls]
    detail: dict[str, Any] = {
        "run": str(run.path),
        "attempt_id": attempt_id,
        "owner": turn.attempt_id,
        "index": turn.index,
        "author": turn.author,
        "text": turn.text,
        "calls": calls,
        "tokens": {
            "prompt": turn.prompt_tokens,
            "completion": turn.completion_tokens,
            "cached": turn.cached_tokens,
            "estimated": turn.estimated,
        },
        "entropy": turn.entropy,
        "duration_s": turn.duration_s,
        "format_error": turn.format_error,
        "checkpoint": turn.checkpoint,
    }
    detail.update(_turn_files(run, owner, turn, since, max_diff_chars))
    return detail


def _turn_on_path(
    run: RunFolder, attempt_id: int, index: int, path: Sequence[Turn] | None
) -> tuple[Turn, str]:
    """Turn `index` on attempt `attempt_id`'s path (`path`, or the tree's) and the checkpoint
    before it on that path, or a ViewerError naming what is missing. The checkpoint comes
    from the path itself: asking the tree for it would load the path again, once per turn."""
    attempt = run.tree.find_attempt(attempt_id)
    if attempt is None:
        raise ViewerError(f"{run.path}: no attempt {attempt_id!r} in this run")
    if path is None:
        try:
            path = run.tree.path(attempt)
        except TreeError as error:
            raise ViewerError(f"{run.path}: attempt {attempt_id}: {error}") from None
    found = [position for position, t in enumerate(path) if t.index == index]
    if not found:
        last = path[-1].index if path else attempt.boundary
        raise ViewerError(
            f"{run.path}: attempt {attempt_id} has no turn {index!r} (its turns are 1..{last})"
        )
    position = found[0]
    if position:
        return path[position], path[position - 1].checkpoint
    return path[position], run.tree.checkpoint(attempt, 0)


def _call_detail(call: CallRecord, max_output_chars: int) -> dict[str, Any]:
    """One shell call of a turn, its output cut at `max_output_chars` (`cut`: how much)."""
    output, cut = _cap(call.output, max_output_chars)
    return {
        "command": call.command,
        "output": output,
        "cut": cut,
        "exit_code": call.exit_code,
        "timed_out": call.timed_out,
        "truncated": call.truncated,
        "duration_s": call.duration_s,
    }


def _turn_files(
    run: RunFolder, owner: Attempt, turn: Turn, since: str, max_diff_chars: int
) -> dict[str, Any]:
    """`files`, `noise`, `since` and `files_error`: what the turn's layer changed. A turn
    stored before its changes were recorded has them read from the layers here; a layer
    that cannot be read (collected, a store moved without its layers, or a `--ray` run's
    node store this machine cannot read) gives an error message, and the recorded files
    without diffs (none when they were not recorded), so the rest of the turn still shows.
    `since` is the checkpoint before the turn's on its path."""
    changes: Sequence[Change] | None = turn.changes
    layers: LayerStore | None = None
    layers_error = None
    try:
        layers = run.store_of(owner.task_id, turn.checkpoint)  # a --ray run's: a node's store
        if changes is None:
            changes = checkpoint_changes(layers, since, turn.checkpoint)
    except (SandboxError, OSError, RunFolderError) as error:
        layers_error = str(error)
    if changes is None:
        return {"since": since, "files": [], "noise": [], "files_error": layers_error}
    files = []
    noise = []
    for change in changes:
        if is_noise(change.path):
            noise.append({"path": change.path, "kind": change.kind})
            continue
        item: dict[str, Any] = {
            "path": change.path,
            "kind": change.kind,
            "size": None if change.kind == "deleted" else change.size,
            "binary": False,
            "diff": None,
            "diff_cut": 0,
        }
        before = after = None
        try:
            if layers is not None:
                before = layers.read(since, change.path)
                after = layers.read(turn.checkpoint, change.path)
        except (SandboxError, OSError):
            before = after = None
        if before is not None or after is not None:
            item["binary"] = b"\0" in (before or b"") + (after or b"")
            diff, cut = _cap(file_diff(change.path.lstrip("/"), before, after), max_diff_chars)
            item["diff"], item["diff_cut"] = diff, cut
        files.append(item)
    return {"since": since, "files": files, "noise": noise, "files_error": layers_error}


def _cap(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to `limit` characters, and how many were cut (0: none)."""
    if len(text) <= limit:
        return text, 0
    return text[: max(limit, 0)], len(text) - max(limit, 0)
