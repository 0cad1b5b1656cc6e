"""The heuristic analyst and reviewer: what the roles fall back on, and what serves the oracles.

Boundaries: a failing test's traceback names files; the mistake is most likely in
the first turn that touched one of them, so the branch resumes just before it.
Further candidates spread over the attempt's progress (`boundary_candidates`):
the first command that mentions a failing test or a named file, the latest edits,
the latest failed commands, half-way; boundary 0 always comes last, so a branch
never restarts from scratch while the attempt offers anything else.

Plans: the branches are spread over the candidates' boundaries, and each starts
with a turn in the actor's voice that says what the verifier found (the failing
tests, their first message, the files their traces name) and looks at those files
again. Like the model roles, the heuristic reads only the attempts and the
verifier's diagnostics: never the task's reference solution or its hidden tests.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sprout.roles.touched import touches, turn_files
from sprout.roles.types import Analysis, BranchPlan, Review
from sprout.task import Task
from sprout.tree import Attempt, RolloutTree, Turn

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


def failing_tests(diagnostics: Mapping[str, Any] | None) -> list[str]:
    """The ids of the tests the verifier reports failed or errored, in its order."""
    return [
        str(test.get("name", ""))
        for test in (diagnostics or {}).get("tests", ())
        if isinstance(test, Mapping) and test.get("outcome") in ("failed", "error")
    ]


def named_words(tests: Sequence[str], files: Sequence[str]) -> list[str]:
    """What a command that touched the verifier's findings would mention: each failing
    test's function and file, and each named file's base name."""
    words: dict[str, None] = {}
    for test in tests:
        for part in test.replace("::", " ").replace("/", " ").split():
            stem = part.split("[", 1)[0]
            if len(stem) > 3 and stem not in ("tests", "test"):
                words.setdefault(stem, None)
    for path in files:
        words.setdefault(posixpath.basename(path), None)
    return list(words)


@dataclass(frozen=True)
class Candidate:
    boundary: int
    why: str
    """What makes it a candidate, completing "the state before ...": for `keep`."""


def boundary_candidates(
    path: Sequence[Turn],
    files_by_turn: Mapping[int, Sequence[str]],
    diagnostics: Mapping[str, Any] | None,
    workdir: str,
) -> list[Candidate]:
    """Candidate boundaries of a failed attempt (its `path` of turns), best first, spread
    over its progress, at most MAX_BOUNDARIES:

    1. before each turn that changed a file the failing tests' tracebacks name, first first;
    2. before the first turn whose commands mention a failing test or a named file;
    3. before the latest edits of the workdir, latest first;
    4. before the latest commands that failed (non-zero exit, timeout), latest first;
    5. half-way through the attempt; then 0, the untouched task, always last.
    """
    traceback = traceback_files(diagnostics, workdir)
    words = named_words(failing_tests(diagnostics), traceback)
    inside = workdir.rstrip("/") + "/"
    own = [turn for turn in path if turn.index >= 1]
    found: list[Candidate] = []
    for index in sorted(files_by_turn):
        named = [p for p in traceback if touches(set(files_by_turn[index]), p)]
        if named:
            found.append(Candidate(index - 1, f"turn {index}, which changed {named[0]}"))
    for turn in own:
        said = [w for w in words if any(w in call.command for call in turn.calls)]
        if said:
            found.append(Candidate(turn.index - 1, f"turn {turn.index}, which ran {said[0]}"))
            break
    for index in sorted(files_by_turn, reverse=True):
        edited = [p for p in files_by_turn[index] if p.startswith(inside)]
        if edited:
            found.append(Candidate(index - 1, f"turn {index}, which edited {edited[0]}"))
    for turn in reversed(own):
        failed = [c for c in turn.calls if c.exit_code != 0]
        if failed:
            code = "timed out" if failed[0].exit_code is None else f"exited {failed[0].exit_code}"
            found.append(Candidate(turn.index - 1, f"turn {turn.index}, whose command {code}"))
    if own:
        middle = own[len(own) // 2].index - 1
        found.append(Candidate(middle, f"turn {middle + 1}: half-way through the attempt"))
    unique: dict[int, Candidate] = {}
    for candidate in found:
        unique.setdefault(candidate.boundary, candidate)
    kept = [c for c in unique.values() if c.boundary != 0][: MAX_BOUNDARIES - 1]
    return [*kept, Candidate(0, "the first turn: a fresh start")]


def candidate_boundaries(tree: RolloutTree, task: Task, attempt: Attempt) -> tuple[int, ...]:
    """The heuristic's candidate boundaries for a finished, verified `attempt`, best first:
    for schedules that branch without an analyst (e.g. unguided training children)."""
    attempt = tree.attempt(attempt.id)
    files = turn_files(tree, attempt)
    found = boundary_candidates(tree.path(attempt), files, attempt.diagnostics, task.workdir)
    return tuple(c.boundary for c in found)


def heuristic_analysis(
    attempt: Attempt,
    path: Sequence[Turn],
    files_by_turn: Mapping[int, Sequence[str]],
    workdir: str,
    reason: str,
) -> Analysis:
    """The analysis the heuristic writes for `attempt` (diagnostics stored on it), whose
    turns are `path`."""
    traceback = traceback_files(attempt.diagnostics, workdir)
    found = boundary_candidates(path, files_by_turn, attempt.diagnostics, workdir)
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


WARNING_TESTS = 3
"""Failing tests a heuristic starting turn names."""
WARNING_FILES = 2
"""Files of the workdir that a heuristic starting turn looks at again."""


def warning_turn(diagnostics: Mapping[str, Any] | None, workdir: str) -> str:
    """A starting turn in the actor's voice, from the verifier's findings alone: it names the
    failing tests (with the first line of the first message) and the files their traces
    name, then looks at those files of the workdir again (or lists the workdir)."""
    data = diagnostics or {}
    failing = [
        test
        for test in data.get("tests", ())
        if isinstance(test, Mapping) and test.get("outcome") in ("failed", "error")
    ]
    if failing:
        names = ", ".join(str(test.get("name")) for test in failing[:WARNING_TESTS])
        more = len(failing) - WARNING_TESTS
        message = str(failing[0].get("message") or "").strip().splitlines()
        said = f"The checks that failed: {names}" + (f" and {more} more" if more > 0 else "")
        if message:
            said += f" ({message[0][:200]})"
    else:
        said = f"The result was not accepted: {data.get('summary') or 'no tests passed'!s}"
    named = traceback_files(data, workdir)
    if named:
        said += ". Their traces point at " + ", ".join(named[:WARNING_FILES])
    inside = workdir.rstrip("/") + "/"
    files = [path for path in named if path.startswith(inside)][:WARNING_FILES]
    if files:
        command = "\n".join(f"cat {shlex.quote(path)}" for path in files)
    else:
        command = f"ls -la {shlex.quote(workdir)}"
    return f"{said}. Let me look at this again before going on.\n\n```bash\n{command}\n```"


def spread_plans(
    boundaries: Mapping[int, Sequence[int]],
    *,
    branches: int,
    tried: Iterable[tuple[int, int]],
    starting_turn: Callable[[int, int], str],
    why: str,
) -> list[BranchPlan]:
    """`branches` plans over the parents' candidate boundaries (parent id -> best first):
    most recent attempts first, each attempt's best, then every second best, ...,
    skipping (parent, boundary) pairs in `tried` unless nothing else is left, and
    cycling when there are fewer pairs than branches. `starting_turn(parent, boundary)`
    writes each plan's first turn; `why` names where the boundaries came from."""
    ranked = [(parent, tuple(boundaries[parent]) or (0,)) for parent in sorted(boundaries)[::-1]]
    pairs: list[tuple[int, int, int]] = []
    for rank in range(max(len(bounds) for _, bounds in ranked)):
        pairs += [(parent, bounds[rank], rank) for parent, bounds in ranked if rank < len(bounds)]
    done = set(tried)
    fresh = [pair for pair in pairs if pair[:2] not in done] or pairs
    plans = []
    for n in range(branches):
        parent, boundary, rank = fresh[n % len(fresh)]
        reason = f"heuristic: boundary {boundary} is choice {rank + 1} of attempt {parent}'s {why}"
        plans.append(BranchPlan(parent, boundary, starting_turn(parent, boundary), reason))
    return plans


def heuristic_review(
    parents: Sequence[Attempt],
    analyses: Mapping[int, Analysis],
    *,
    branches: int,
    tried: Iterable[tuple[int, int]],
    workdir: str,
    reason: str,
) -> Review:
    """The reviewer's fallback: plans spread over the analyses' boundaries (`spread_plans`;
    an attempt without an analysis offers boundary 0), each starting with its parent's
    `warning_turn`."""
    by_id = {attempt.id: attempt for attempt in parents}
    plans = spread_plans(
        {a.id: analyses[a.id].boundaries if a.id in analyses else (0,) for a in parents},
        branches=branches,
        tried=tried,
        starting_turn=lambda parent, _: warning_turn(by_id[parent].diagnostics, workdir),
        why="analysis; the starting turn repeats what the verifier found",
    )
    return Review(tuple(plans), "heuristic", reason)


def trace_boundaries(
    path: Sequence[Turn], files_by_turn: Mapping[int, Sequence[str]], workdir: str
) -> tuple[int, ...]:
    """Candidate boundaries read from an attempt's trace alone (no verifier): before the
    latest turns whose commands failed (non-zero exit, timeout), then before the latest
    edits of the workdir, then the untouched task; at most MAX_BOUNDARIES."""
    inside = workdir.rstrip("/") + "/"
    failing = [t.index for t in reversed(path) if any(c.exit_code != 0 for c in t.calls)]
    edits = [
        t.index
        for t in reversed(path)
        if any(p.startswith(inside) for p in files_by_turn.get(t.index, ()))
    ]
    found = dict.fromkeys([*(i - 1 for i in failing), *(i - 1 for i in edits), 0])
    return tuple(found)[:MAX_BOUNDARIES]


def trace_turn(
    path: Sequence[Turn], files_by_turn: Mapping[int, Sequence[str]], boundary: int
) -> str:
    """A starting turn from the trace alone: what the turns after `boundary` ran that failed
    and which files they changed, then a look at those files again."""
    later = [t for t in path if t.index > boundary]
    failed = [c for t in later for c in t.calls if c.exit_code != 0]
    changed = list(dict.fromkeys(p for t in later for p in files_by_turn.get(t.index, ())))
    said = f"Going back over what I did after turn {boundary}"
    if failed:
        call = failed[0]
        last = (call.output.strip().splitlines() or [""])[-1][:200]
        code = "timed out" if call.exit_code is None else f"exited {call.exit_code}"
        said += f": `{call.command[:120]}` {code} ({last})"
    if changed:
        said += "; I changed " + ", ".join(changed[:WARNING_FILES])
    files = [path for path in changed if not path.endswith("/")][:WARNING_FILES]
    command = "\n".join(f"cat {shlex.quote(path)}" for path in files) or "ls -la"
    return f"{said}. Let me check that again before going on.\n\n```bash\n{command}\n```"


def trace_review(
    paths: Mapping[int, Sequence[Turn]],
    files: Mapping[int, Mapping[int, Sequence[str]]],
    *,
    branches: int,
    tried: Iterable[tuple[int, int]],
    workdir: str,
    reason: str,
) -> Review:
    """The supervisor's fallback (Shepherd's reading): plans spread over `trace_boundaries`
    of each parent (id -> its path and the files each turn changed), each starting with a
    `trace_turn`. Nothing of the verifier is read."""
    plans = spread_plans(
        {parent: trace_boundaries(path, files[parent], workdir) for parent, path in paths.items()},
        branches=branches,
        tried=tried,
        starting_turn=lambda parent, boundary: trace_turn(paths[parent], files[parent], boundary),
        why="trace (failed commands, then edits)",
    )
    return Review(tuple(plans), "heuristic", reason)
