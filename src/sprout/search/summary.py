"""What a run achieved, per method and per task: results.json and the comparison table.

Everything is recomputed from the run database, so the numbers of a resumed run are
those of the whole run, and results.json can be rebuilt from sprout.db alone.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from sprout import __version__
from sprout.durable import write_atomically
from sprout.models import ModelError
from sprout.models.resolve import ModelSpec
from sprout.runfolder import RunFolder
from sprout.search.imported import imported_sources
from sprout.tree import RolloutTree

_writing = threading.Lock()
"""Worker threads finish tasks at once; results.json's temporary file is per process."""


def task_result(tree: RolloutTree, task_id: str, method: str) -> dict[str, Any]:
    """One method on one task: resolved, tokens, attempts, turns and the roots' Pass@1.

    `attempts` are those that ran at least one turn of their own (docs/run.md): neither one
    stopped before its first turn because another passed, nor one a fault ended before it;
    `faults` counts every attempt a fault ended, turns or not."""
    mine = [a for a in tree.attempts(task_id) if a.method == method]
    turns = {a.id: len(tree.own_turns(a)) for a in mine}
    attempts = [a for a in mine if turns[a.id]]
    imported = imported_sources(tree)
    roots = [a.reward for a in attempts if a.kind == "root" and a.reward is not None]
    tokens = tree.tokens(task_id=task_id, method=method)
    faults: dict[str, int] = {}
    for attempt in mine:
        if attempt.status == "error":
            faults[attempt.fault or "unknown"] = faults.get(attempt.fault or "unknown", 0) + 1
    return {
        "resolved": any(a.passed for a in mine),
        "faults": faults,
        "role_sources": role_sources(tree, task_id, method),
        "tokens": {
            "spent": tokens.spent,
            "prefix_once": tokens.prefix_once,
            "estimated": tokens.estimated,
        },
        "attempts": len(attempts),
        "pass_at_1": sum(roots) / len(roots) if roots else None,
        "turns_executed": sum(turns[a.id] for a in attempts if a.id not in imported),
        "turns_imported": sum(turns[a.id] for a in attempts if a.id in imported),
        "turns_reused": sum(a.boundary for a in attempts if a.kind == "branch"),
    }


def role_sources(tree: RolloutTree, task_id: str, method: str) -> dict[str, dict[str, int]]:
    """Who wrote the analyses and reviews of (task, method): `{"analyst": {"model": 3,
    "heuristic": 1}, ...}`. With a served model, every `heuristic` is a fallback."""
    mine = {a.id for a in tree.attempts(task_id) if a.method == method}
    counts: dict[str, dict[str, int]] = {}
    bodies = [
        ("analyst", body)
        for attempt_id, body in tree.analyses(task_id).items()
        if attempt_id in mine
    ]
    bodies += [("reviewer", body) for body in tree.reviews(task_id, method).values()]
    for role, body in bodies:
        source = str(body.get("source", "model"))
        by_source = counts.setdefault(role, {})
        by_source[source] = by_source.get(source, 0) + 1
    return counts


def _add_counts(total: dict[str, Any], part: dict[str, Any]) -> None:
    """Add nested counts `part` into `total` in place."""
    for key, value in part.items():
        if isinstance(value, dict):
            _add_counts(total.setdefault(key, {}), value)
        else:
            total[key] = total.get(key, 0) + value


def results(run: RunFolder, methods: Sequence[str]) -> dict[str, Any]:
    """results.json's content: `{"methods": {...}, "tasks": {...}}` (shape in docs/run.md)."""
    tree = run.tree
    schedules = tree.schedules()
    per_task: dict[str, dict[str, Any]] = {}
    summary: dict[str, Any] = {}
    for method in methods:
        mine = [s for s in schedules if s["method"] == method]
        rows = []
        for schedule in mine:
            row = task_result(tree, schedule["task_id"], method)
            if schedule["error"]:
                row["error"] = schedule["error"]
            rows.append(row)
            if schedule["status"] == "running":
                row["incomplete"] = True
            per_task.setdefault(schedule["task_id"], {})[method] = {
                "resolved": row["resolved"],
                "tokens": row["tokens"],
                "attempts": row["attempts"],
                **({"error": schedule["error"]} if schedule["error"] else {}),
                **({"incomplete": True} if row.get("incomplete") else {}),
                **({"faults": row["faults"]} if row["faults"] else {}),
            }
        summary[method] = _method_summary(rows, mine)
    meta = tree.meta()
    concurrency, isolation, warnings, images = (
        meta.concurrency,
        meta.isolation,
        meta.task_warnings,
        meta.images,
    )
    return {
        "sprout_version": __version__,
        "model": (meta.settings or {}).get("model"),
        "methods": summary,
        "tasks": per_task,
        **({"concurrency": concurrency.to_json()} if concurrency is not None else {}),
        **({"isolation": isolation} if isolation is not None else {}),
        **({"task_warnings": warnings} if warnings else {}),
        **({"images": images} if images else {}),
    }


def _method_summary(rows: list[dict[str, Any]], schedules: list[dict[str, Any]]) -> dict[str, Any]:
    """One method's line of results.json's `methods`: its task rows (`task_result`) added up,
    and the wall time of its `schedules`."""
    pass_at_1 = [row["pass_at_1"] for row in rows if row["pass_at_1"] is not None]
    resolved = sum(row["resolved"] for row in rows)
    faults: dict[str, Any] = {}
    sources: dict[str, Any] = {}
    for row in rows:
        _add_counts(faults, row["faults"])
        _add_counts(sources, row["role_sources"])
    return {
        "tasks": len(rows),
        "resolved": resolved,
        "resolve_rate": resolved / len(rows) if rows else 0.0,
        "pass_at_1": sum(pass_at_1) / len(pass_at_1) if pass_at_1 else None,
        "tokens": {
            "spent": sum(row["tokens"]["spent"] for row in rows),
            "prefix_once": sum(row["tokens"]["prefix_once"] for row in rows),
            "estimated": any(row["tokens"]["estimated"] for row in rows),
        },
        "attempts": sum(row["attempts"] for row in rows),
        "turns_executed": sum(row["turns_executed"] for row in rows),
        "turns_imported": sum(row["turns_imported"] for row in rows),
        "turns_reused": sum(row["turns_reused"] for row in rows),
        "wall_s": round(sum(s["wall_s"] for s in schedules), 3),
        "failed": sum(
            not row["resolved"] and "error" not in row and not row.get("incomplete") for row in rows
        ),
        "errors": sum("error" in row for row in rows),
        "incomplete": sum(bool(row.get("incomplete")) for row in rows),
        "faults": faults,
        "role_sources": sources,
    }


def write_results(run: RunFolder, methods: Sequence[str]) -> dict[str, Any]:
    """Recompute and atomically replace `results.json`; returns what was written."""
    with _writing:
        content = results(run, methods)
        text = json.dumps(content, indent=2) + "\n"
        write_atomically(str(run.path / "results.json"), text, durable=True)
    return content


def table(content: dict[str, Any]) -> str:
    """The comparison, one row per method, like the paper's table."""
    header = (
        "method",
        "resolved",
        "rate",
        "Pass@1",
        "tokens spent",
        "prefix once",
        "attempts",
        "turns run",
        "reused",
        "wall",
    )
    rows = [header]
    estimated = False
    for name, m in content["methods"].items():
        mark = "~" if m["tokens"]["estimated"] else ""
        estimated = estimated or bool(mark)
        rows.append(
            (
                name,
                f"{m['resolved']}/{m['tasks']}",
                f"{100 * m['resolve_rate']:.1f}%",
                "-" if m["pass_at_1"] is None else f"{m['pass_at_1']:.2f}",
                f"{mark}{m['tokens']['spent']:,}",
                f"{mark}{m['tokens']['prefix_once']:,}",
                str(m["attempts"]),
                str(m["turns_executed"]),
                str(m["turns_reused"]),
                f"{m['wall_s']:.1f}s",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines.append(
        "tokens spent: every prompt and completion token of every call (actor, analyst, "
        "reviewer, reasoning included); prefix once: a prefix shared in the tree (a branch's "
        "retained turns, the roots' common prompt) counted once"
    )
    if estimated:
        lines.append("~ estimated from text length: the oracle models report no token usage")
    if "concurrency" in content:
        at_once = content["concurrency"]
        lines.append(
            f"at once: {at_once['peak']} sandboxes at the most, of {at_once['workers']} "
            f"allowed ({at_once['basis']})"
        )
    lines += _notes(content)
    return "\n".join(lines)


def _writes_role_output(model: object) -> bool:
    """Whether `model` (the --model string the run's settings store) writes analyses and
    reviews itself, so that a heuristic answer is a fallback; models that cannot are served
    by the heuristics."""
    if not isinstance(model, str):
        return False
    try:
        return ModelSpec.parse(model).capabilities.structured_output
    except ModelError:
        return False


def _notes(content: dict[str, Any]) -> list[str]:
    """What the table's figures leave out: pairs that ended in error or are unfinished (they
    count as not resolved above), and the roles' fallbacks with a served model."""
    notes = []
    answers_roles = _writes_role_output(content.get("model"))
    for name, m in content["methods"].items():
        said = []
        if m.get("errors"):
            faults = ", ".join(f"{n} {kind}" for kind, n in sorted(m["faults"].items()))
            said.append(
                f"{m['errors']} of {m['tasks']} tasks ended in error"
                + (f" (attempts: {faults})" if faults else "")
            )
        if m.get("incomplete"):
            said.append(f"{m['incomplete']} unfinished")
        if answers_roles:
            for role, by in sorted(m.get("role_sources", {}).items()):
                if by.get("heuristic"):
                    said.append(
                        f"the {role} fell back to the heuristic {by['heuristic']} of "
                        f"{sum(by.values())} times"
                    )
        if said:
            notes.append(f"{name}: " + "; ".join(said))
    approximated = {
        entry["image"]: entry["approximation"]
        for entry in (content.get("images") or {}).values()
        if entry.get("approximation")
    }
    for image, approximation in sorted(approximated.items()):
        tasks = sum(e["image"] == image for e in content["images"].values())
        notes.append(
            f"approximated image: {approximation} ({tasks} task{'s' * (tasks != 1)}); these "
            "tasks did not run on their own image"
        )
    if any(m.get("errors") or m.get("incomplete") for m in content["methods"].values()):
        notes.append(
            "errors are not failures: such tasks count as not resolved above, results.json "
            "has each reason, and --resume retries model and sandbox faults and verifies "
            "again what the verifier could not"
        )
    return notes
