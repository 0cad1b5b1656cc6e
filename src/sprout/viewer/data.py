"""A run folder read into JSON-ready dicts: the data layer of the episode viewer.

Three reads, each sized for a page that draws lazily: `run_summary` (methods side by
side and the tokens-vs-solved curve), `task_tree` (one task's attempts with compact
turns, enough to draw the tree), and `turn_detail` (one turn in full, with the files
its layer changed). Every value is plain JSON (str, int, float, bool, None, list,
dict), so a server can `json.dumps` it and report.html can embed it unchanged.

Nothing here writes to the run: everything is read through the run's tree, and the
figures come from `sprout.search.summary` (so the page and results.json never disagree).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sprout.edits import is_noise
from sprout.runfolder import RunFolder, RunFolderError
from sprout.sandbox import LayerStore
from sprout.sandbox.changes import checkpoint_changes
from sprout.sandbox.errors import SandboxError
from sprout.search.summary import results
from sprout.tree import Attempt, CallRecord, Change, TreeError, Turn
from sprout.verify.runner import file_diff


class ViewerError(ValueError):
    """An id the run does not hold (task, attempt, turn); the message names the run folder
    and the id, so a server can show it as is instead of a stack trace."""


# the run


def run_summary(run: RunFolder) -> dict[str, Any]:
    """The run at a glance: its tasks, each method's figures, and a tokens-vs-solved curve.

    The figures are `sprout.search.summary.results` itself (not recomputed), so they equal
    results.json. Each method's curve has one point per (task, method) schedule, in the
    order the schedules finished (`"order": "finished"`, from the schedules table's finish
    times); when a schedule has no finish time yet (still running, or a store written
    before the times were kept) the whole curve uses task order instead
    (`"order": "task"`), so the curve never mixes two orders. A point holds the tokens
    spent (and with prefixes counted once) and the tasks solved, both cumulative.
    """
    methods = _methods(run)
    content = results(run, methods)
    finished = run.tree.schedule_finish_times()
    task_ids = run.tree.task_ids()
    curves: dict[str, Any] = {}
    for method in methods:
        done = [t for t in task_ids if method in content["tasks"].get(t, {})]
        times = [finished.get((t, method)) for t in done]
        order = "finished" if all(time is not None for time in times) else "task"
        if order == "finished":
            done = [t for _, t in sorted(zip(times, done, strict=True), key=lambda p: p[0] or 0.0)]
        spent = prefix_once = solved = 0
        points = []
        for task_id in done:
            row = content["tasks"][task_id][method]
            spent += row["tokens"]["spent"]
            prefix_once += row["tokens"]["prefix_once"]
            solved += int(row["resolved"])
            points.append(
                {
                    "task_id": task_id,
                    "tokens": spent,
                    "tokens_prefix_once": prefix_once,
                    "solved": solved,
                    "resolved": row["resolved"],
                }
            )
        curves[method] = {"order": order, "points": points}
    return {
        "run": str(run.path),
        "methods": content["methods"],
        "tasks": [
            {"id": task_id, "methods": content["tasks"].get(task_id, {})} for task_id in task_ids
        ],
        "curves": curves,
    }


def _methods(run: RunFolder) -> list[str]:
    """The run's methods: those its stored settings name (in their order), then any other
    method a schedule ran (a run driven without `open_run` stores no settings)."""
    names: list[str] = []
    settings = run.tree.get_meta("settings")
    if isinstance(settings, dict):
        for method in settings.get("methods") or []:
            if isinstance(method, dict) and isinstance(method.get("name"), str):
                names.append(method["name"])
    for schedule in run.tree.schedules():
        if schedule["method"] not in names:
            names.append(schedule["method"])
    return names


# one task's tree


def task_tree(run: RunFolder, task_id: str) -> dict[str, Any]:
    """Every attempt of `task_id` with its own turns as compact items, its branch points,
    and the first passing path per method: enough to draw the whole tree without loading
    any turn's full text or output (that is `turn_detail`, fetched when a turn is opened).

    An attempt's `analysis` is the analyst's reading of it (failed attempts only); its
    `review` is the reviewer's plan that started it (branches only), matched by method,
    round, parent and boundary. Neither was ever part of the learner's input.
    """
    tree = run.tree
    if task_id not in tree.task_ids():
        raise ViewerError(f"{run.path}: no task {task_id!r} in this run")
    attempts = tree.attempts(task_id)
    analyses = tree.analyses(task_id)
    reviews = tree.reviews(task_id)
    ids = [a.id for a in attempts]
    finished = tree.attempt_finish_times(ids)
    turn_times = tree.turn_times(ids)
    items = []
    seen: dict[tuple[Any, ...], int] = {}
    for attempt in attempts:
        turns = tree.own_turns(attempt)
        key: tuple[Any, ...] = (attempt.method, attempt.round, attempt.parent_id)
        key += (attempt.boundary, attempt.starting_turn)
        rank = seen[key] = seen.get(key, -1) + 1
        items.append(
            {
                "id": attempt.id,
                "parent": attempt.parent_id,
                "boundary": attempt.boundary,
                "kind": attempt.kind,
                "method": attempt.method,
                "round": attempt.round,
                "guided": attempt.guided,
                "starting_turn": attempt.starting_turn,
                "status": attempt.status,
                "reward": attempt.reward,
                "end_reason": attempt.end_reason,
                "created": attempt.created,
                "finished": finished.get(attempt.id),
                "last_index": turns[-1].index if turns else attempt.boundary,
                "diagnostics": _diagnostics(attempt.diagnostics),
                "analysis": analyses.get(attempt.id),
                "review": _review_of(attempt, reviews, rank),
                "tokens": tree.tokens(attempt_id=attempt.id).to_json(),
                "turns": [_turn_item(t, turn_times.get((t.attempt_id, t.index))) for t in turns],
            }
        )
    return {
        "run": str(run.path),
        "task_id": task_id,
        "attempts": items,
        "branch_points": _branch_points(attempts),
        "reviews": [
            {"method": method, "round": round, **body}
            for (method, round), body in sorted(reviews.items())
        ],
        "passing_paths": _passing_paths(run, attempts, finished),
    }


def _turn_item(turn: Turn, created: float | None) -> dict[str, Any]:
    """One turn in a line: what a tree node or a timeline tick needs, and no more."""
    text = turn.text.strip()
    return {
        "index": turn.index,
        "author": turn.author,
        "first_line": text.splitlines()[0] if text else "",
        "calls": len(turn.calls),
        "tokens": {
            "prompt": turn.prompt_tokens,
            "completion": turn.completion_tokens,
            "cached": turn.cached_tokens,
            "estimated": turn.estimated,
        },
        "duration_s": turn.duration_s,
        "format_error": turn.format_error,
        "created": created,
    }


def _diagnostics(diagnostics: dict[str, Any] | None) -> dict[str, Any] | None:
    """The verifier's counts, summary and failing tests; the log tail stays out (it can be
    long, and the summary already says what failed)."""
    if diagnostics is None:
        return None
    tests = diagnostics.get("tests") or []
    return {
        "summary": diagnostics.get("summary"),
        "passed": diagnostics.get("passed"),
        "failed": diagnostics.get("failed"),
        "errored": diagnostics.get("errored"),
        "skipped": diagnostics.get("skipped"),
        "required_missing": diagnostics.get("required_missing") or [],
        "source": diagnostics.get("source"),
        "failing": [
            {"name": t.get("name"), "outcome": t.get("outcome"), "message": t.get("message")}
            for t in tests
            if isinstance(t, dict) and t.get("outcome") != "passed"
        ],
    }


def _review_of(
    attempt: Attempt, reviews: dict[tuple[str, int], Any], rank: int
) -> dict[str, Any] | None:
    """The reviewer's plan that started `attempt`: the plan of its (method, round) review
    with the same parent and boundary, preferring those with the same starting turn. A
    round may plan the same branch twice; the `rank`-th such branch (in id order, the
    order they were started) gets the `rank`-th such plan."""
    if attempt.kind != "branch":
        return None
    body = reviews.get((attempt.method, attempt.round))
    if not isinstance(body, dict):
        return None
    plans = [
        (i, p)
        for i, p in enumerate(body.get("plans") or [])
        if isinstance(p, dict)
        and p.get("parent_id") == attempt.parent_id
        and p.get("boundary") == attempt.boundary
    ]
    if not plans:
        return None
    same = [(i, p) for i, p in plans if p.get("starting_turn") == attempt.starting_turn]
    chosen = same or plans
    index, plan = chosen[min(rank, len(chosen) - 1)]
    return {
        "method": attempt.method,
        "round": attempt.round,
        "source": body.get("source"),
        "fallback_reason": body.get("fallback_reason"),
        "plan_index": index,
        "plan": plan,
    }


def _branch_points(attempts: list[Attempt]) -> list[dict[str, Any]]:
    """Each (parent, boundary) some branch left from, with the branches that left it."""
    points: dict[tuple[int, int], list[int]] = {}
    for attempt in attempts:
        if attempt.kind == "branch" and attempt.parent_id is not None:
            points.setdefault((attempt.parent_id, attempt.boundary), []).append(attempt.id)
    return [
        {"attempt": parent, "boundary": boundary, "branches": children}
        for (parent, boundary), children in sorted(points.items())
    ]


def _passing_paths(
    run: RunFolder, attempts: list[Attempt], finished: dict[int, float | None]
) -> dict[str, list[list[int]]]:
    """Per method, the path of the attempt that passed first (earliest finish time, then
    lowest id) as `[attempt id, turn index]` pairs from the root's first turn to the
    passing attempt's last; inherited turns name the ancestor that owns them."""
    paths: dict[str, list[list[int]]] = {}
    passing = [a for a in attempts if a.reward == 1.0]
    passing.sort(key=lambda a: (finished.get(a.id) is None, finished.get(a.id) or 0.0, a.id))
    for attempt in passing:
        if attempt.method not in paths:
            paths[attempt.method] = [[t.attempt_id, t.index] for t in run.tree.path(attempt)]
    return paths


# one turn


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
    turn = _turn_on_path(run, attempt_id, index, path)
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
    detail.update(_turn_files(run, owner, turn, max_diff_chars))
    return detail


def _turn_on_path(run: RunFolder, attempt_id: int, index: int, path: Sequence[Turn] | None) -> Turn:
    """Turn `index` on attempt `attempt_id`'s path (`path`, or the tree's), or a ViewerError
    naming what is missing."""
    attempt = run.tree.find_attempt(attempt_id)
    if attempt is None:
        raise ViewerError(f"{run.path}: no attempt {attempt_id!r} in this run")
    if path is None:
        try:
            path = run.tree.path(attempt)
        except TreeError as error:
            raise ViewerError(f"{run.path}: attempt {attempt_id}: {error}") from None
    found = [t for t in path if t.index == index]
    if not found:
        last = path[-1].index if path else attempt.boundary
        raise ViewerError(
            f"{run.path}: attempt {attempt_id} has no turn {index!r} (its turns are 1..{last})"
        )
    return found[0]


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


def _turn_files(run: RunFolder, owner: Attempt, turn: Turn, max_diff_chars: int) -> dict[str, Any]:
    """`files`, `noise`, `since` and `files_error`: what the turn's layer changed. A turn
    stored before its changes were recorded has them read from the layers here; a layer
    that cannot be read (collected, a store moved without its layers, or a `--ray` run's
    node store this machine cannot read) gives an error message, and the recorded files
    without diffs (none when they were not recorded), so the rest of the turn still shows."""
    since = run.tree.checkpoint(owner, turn.index - 1)
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
