"""A run folder read into JSON-ready dicts: the data layer of the episode viewer.

Three reads, each sized for a page that draws lazily: `run_summary` (methods side by
side and the tokens-vs-solved curve), `task_tree` (one task's attempts with compact
turns, enough to draw the tree), and `turn_detail` (one turn in full, with the files
its layer changed: `sprout.viewer.turns`). Every value is plain JSON (str, int, float,
bool, None, list, dict), so a server can `json.dumps` it and report.html can embed it unchanged.

Nothing here writes to the run: everything is read through the run's tree, and the
figures come from `sprout.search.summary` (so the page and results.json never disagree).
"""

from __future__ import annotations

from typing import Any

from sprout.errors import SproutError
from sprout.runfolder import RunFolder
from sprout.search.summary import results
from sprout.tree import Attempt, RolloutTree, Turn


class ViewerError(SproutError, ValueError):
    """An id the run does not hold (task, attempt, turn); the message names the run folder
    and the id, so a server can show it as is instead of a stack trace."""


# the run


def run_summary(run: RunFolder) -> dict[str, Any]:
    """The run at a glance: its tasks, each method's figures, and a tokens-vs-solved curve.

    The figures are `sprout.search.summary.results` itself (not recomputed), so they equal
    results.json. Each method's curve has one point per (task, method) schedule, in the
    order the schedules finished (`"order": "finished"`, from the schedules table's finish
    times); when a schedule has no finish time yet (still running, or a database written
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
    settings = run.tree.meta().settings
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
        key: tuple[Any, ...] = (attempt.method, attempt.round, attempt.parent_id)
        key += (attempt.boundary, attempt.starting_turn)
        rank = seen[key] = seen.get(key, -1) + 1
        item = _attempt_item(tree, attempt, tree.own_turns(attempt), turn_times)
        item["finished"] = finished.get(attempt.id)
        item["analysis"] = analyses.get(attempt.id)
        item["review"] = _review_of(attempt, reviews, rank)
        items.append(item)
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


def _attempt_item(
    tree: RolloutTree,
    attempt: Attempt,
    turns: list[Turn],
    turn_times: dict[tuple[int, int], float],
) -> dict[str, Any]:
    """One attempt of `task_tree` as the page draws it: what it is, how it ended, and its
    own turns as compact items."""
    return {
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
        "passed": attempt.passed,
        "end_reason": attempt.end_reason,
        "fault": attempt.fault,
        "restarts": attempt.restarts,
        "created": attempt.created,
        "last_index": turns[-1].index if turns else attempt.boundary,
        "diagnostics": _diagnostics(attempt.diagnostics),
        "tokens": tree.tokens(attempt_id=attempt.id).to_json(),
        "turns": [_turn_item(t, turn_times.get((t.attempt_id, t.index))) for t in turns],
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
    passing = [a for a in attempts if a.passed]
    passing.sort(key=lambda a: (finished.get(a.id) is None, finished.get(a.id) or 0.0, a.id))
    for attempt in passing:
        if attempt.method not in paths:
            paths[attempt.method] = [[t.attempt_id, t.index] for t in run.tree.path(attempt)]
    return paths
