"""The heuristic analyst and reviewer: what the roles fall back on, and what serves the oracles.

Boundaries: a failing test's traceback names files; the mistake is most likely in
the first turn that touched one of them, so the branch resumes just before it
(later touching turns are further candidates). With no such file touched, resume
before the latest edits of the workdir, latest first; boundary 0 always comes last.

Plans: the branches are spread over the candidates' boundaries, and a starting
turn is written only from the task's reference solution (for the oracle models,
which follow such corrective turns); otherwise the branch is unguided.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sprout.roles.touched import touches, turn_files
from sprout.roles.types import Analysis, BranchPlan, Review
from sprout.sandbox import LayerStore
from sprout.task import Task
from sprout.tree import Attempt, RolloutTree

MAX_BOUNDARIES = 5
"""Candidate boundaries kept per analysis (the model's and the heuristic's)."""

_PYTHON_FRAME = re.compile(r'File "([^"<\n][^"\n]*)", line \d+')
"""`File "/app/src/x.py", line 3`; not `File "<string>"`, which names no file."""
_PATH_LINE = re.compile(
    r"(?<![\w./-])((?:/|\.\.?/)?[\w.+-]+(?:/[\w.+-]+)*\.[A-Za-z][\w]*):\d+(?::\d+)?\b"
)
"""`src/x.py:12: in f`, `/app/x.js:3:5`, `main.go:10`: a path with an extension, then a line."""


def traceback_files(diagnostics: Mapping[str, Any] | None, workdir: str) -> list[str]:
    """Files named in the failing tests' messages and the log tail, as absolute paths (relative
    ones resolved against `workdir`), in order of first mention."""
    data = diagnostics or {}
    texts = [
        str(test.get("message", ""))
        for test in data.get("tests", ())
        if isinstance(test, Mapping) and test.get("outcome") in ("failed", "error")
    ]
    texts.append(str(data.get("log_tail") or ""))
    found: dict[str, None] = {}
    for text in texts:
        for match in (*_PYTHON_FRAME.finditer(text), *_PATH_LINE.finditer(text)):
            path = match.group(1)
            found.setdefault(posixpath.normpath(posixpath.join(workdir, path)), None)
    return list(found)


@dataclass(frozen=True)
class Candidate:
    boundary: int
    why: str
    """What makes it a candidate, completing "the state before ...": for `keep`."""


def boundary_candidates(
    files_by_turn: Mapping[int, Sequence[str]], traceback: Sequence[str], workdir: str
) -> list[Candidate]:
    """Candidate boundaries, best first (see the module docstring), at most MAX_BOUNDARIES."""
    found: list[Candidate] = []
    for index in sorted(files_by_turn):
        changed = set(files_by_turn[index])
        named = [path for path in traceback if touches(changed, path)]
        if named:
            found.append(Candidate(index - 1, f"turn {index}, which changed {named[0]}"))
    if not found:
        inside = workdir.rstrip("/") + "/"
        for index in sorted(files_by_turn, reverse=True):
            edited = [p for p in files_by_turn[index] if p.startswith(inside)]
            if edited:
                found.append(Candidate(index - 1, f"turn {index}, which edited {edited[0]}"))
    found.append(Candidate(0, "the first turn: a fresh start"))
    unique: dict[int, Candidate] = {}
    for candidate in found:
        unique.setdefault(candidate.boundary, candidate)
    return list(unique.values())[:MAX_BOUNDARIES]


def candidate_boundaries(
    tree: RolloutTree, layers: LayerStore, task: Task, attempt: Attempt
) -> tuple[int, ...]:
    """The heuristic's candidate boundaries for a finished, verified `attempt`, best first:
    for schedules that branch without an analyst (e.g. unguided training children)."""
    attempt = tree.attempt(attempt.id)
    traceback = traceback_files(attempt.diagnostics, task.workdir)
    found = boundary_candidates(turn_files(tree, layers, attempt), traceback, task.workdir)
    return tuple(c.boundary for c in found)


def heuristic_analysis(
    attempt: Attempt,
    files_by_turn: Mapping[int, Sequence[str]],
    workdir: str,
    reason: str,
) -> Analysis:
    """The analysis the heuristic writes for `attempt` (diagnostics stored on it)."""
    traceback = traceback_files(attempt.diagnostics, workdir)
    found = boundary_candidates(files_by_turn, traceback, workdir)
    summary = str((attempt.diagnostics or {}).get("summary") or "the verifier found no pass")
    changed = {path for paths in files_by_turn.values() for path in paths}
    named = [path for path in traceback if touches(changed, path)]
    why = f"Heuristic reading of the verifier's findings: {summary.rstrip('.')}."
    if named:
        why += f" The failing tests' tracebacks name files it changed: {', '.join(named[:5])}."
    best = found[0]
    keep = (
        "Nothing: start over from the untouched task."
        if best.boundary == 0
        else f"Turns 1..{best.boundary}: the state before {best.why}."
    )
    return Analysis(
        attempt_id=attempt.id,
        why_failed=why,
        keep=keep,
        boundaries=tuple(c.boundary for c in found),
        source="heuristic",
        fallback_reason=reason,
    )


def reference_turn(solution: Sequence[str], boundary: int) -> str | None:
    """A corrective starting turn for a branch at `boundary`: the reference step that comes
    right after it (turn boundary+1 plays step boundary+1), or the last step when the
    boundary lies past the solution; None without a solution.

    The oracle models read it back (`sprout.models.oracle.next_step`): its bash block equals
    the step's command, so they continue with the step after it.
    """
    if not solution:
        return None
    number = min(boundary + 1, len(solution))
    return f"Let me redo step {number} properly.\n\n```bash\n{solution[number - 1]}\n```"


def heuristic_review(
    parents: Sequence[Attempt],
    analyses: Mapping[int, Analysis],
    *,
    branches: int,
    tried: Iterable[tuple[int, int]],
    solution: Sequence[str],
    reason: str,
) -> Review:
    """`branches` plans spread over the candidates' boundaries: most recent attempts first,
    each attempt's boundaries best first, taken in turn (every attempt's best, then every
    second best, ...), skipping (parent, boundary) pairs in `tried` unless nothing else is
    left, and cycling when there are fewer pairs than branches. An attempt without an
    analysis offers boundary 0. Starting turns come from `solution` (see `reference_turn`);
    without one the branches are unguided."""
    ranked = [
        (attempt.id, analyses[attempt.id].boundaries if attempt.id in analyses else (0,))
        for attempt in sorted(parents, key=lambda a: a.id, reverse=True)
    ]
    pairs: list[tuple[int, int, int]] = []
    for rank in range(max(len(bounds) for _, bounds in ranked)):
        pairs += [(parent, bounds[rank], rank) for parent, bounds in ranked if rank < len(bounds)]
    done = set(tried)
    fresh = [pair for pair in pairs if pair[:2] not in done] or pairs
    plans = []
    for n in range(branches):
        parent, boundary, rank = fresh[n % len(fresh)]
        turn = reference_turn(solution, boundary)
        why = f"heuristic: boundary {boundary} is choice {rank + 1} of attempt {parent}'s analysis"
        if turn is not None:
            why += f"; the starting turn redoes reference step {min(boundary + 1, len(solution))}"
        plans.append(BranchPlan(parent, boundary, turn, why))
    return Review(tuple(plans), "heuristic", reason)
