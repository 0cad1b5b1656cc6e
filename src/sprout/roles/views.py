"""Compact, capped views of attempts for the roles' prompts.

An attempt can hold hundreds of turns and calls that print thousands of lines;
every piece shown to a role is cut here to the caps of a `Detail`
(`sprout.roles.detail`), so a prompt's length is bounded whatever the attempt did,
and shrinks, a step at a time, until it fits the model's window. Outputs and logs
keep their tail (where errors are), prose keeps its head, patches keep both ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sprout.fences import without_shell_blocks
from sprout.roles.detail import FULL, Detail
from sprout.roles.types import Analysis
from sprout.tree import Attempt, CallRecord, Turn

FILES_PER_TURN = 8
BRIEF_FILES = 3
BRIEF_COMMAND_CHARS = 120


def head(text: str, limit: int) -> str:
    """`text` cut to its first `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters cut]"


def tail(text: str, limit: int) -> str:
    """`text` cut to its last `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"[{len(text) - limit} earlier characters cut ...]\n{text[-limit:]}"


def ends(text: str, limit: int) -> str:
    """`text` cut to its first and last `limit / 2` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


@dataclass(frozen=True)
class CallView:
    command: str
    status: str
    """"exit 0", "exit 2" or "timed out"."""
    output: str


@dataclass(frozen=True)
class TurnView:
    """One turn as a role reads it; a brief view has commands only."""

    index: int
    author: str
    text: str
    calls: tuple[CallView, ...]
    files: tuple[str, ...]
    """Paths its checkpoint changed (capped; `more_files` counts the rest)."""
    more_files: int
    format_error: bool
    brief: bool


@dataclass(frozen=True)
class TurnList:
    """The turns shown, and how many earlier ones were left out."""

    turns: tuple[TurnView, ...]
    omitted: int
    """Turns before the first one shown (indexes 1..omitted are not listed)."""


def turn_list(
    turns: Sequence[Turn],
    files: Mapping[int, Sequence[str]],
    detail: Detail = FULL,
    *,
    brief: bool = False,
) -> TurnList:
    """The turns, latest first: the newest in full, then more in full while `detail.full`
    lasts, then brief (commands and exit status) while `detail.listed` lasts, the newest
    shown whatever its size; `brief` lists them all brief, in `detail.candidate_turns`.
    `files` holds the paths each turn changed, by index."""
    views: list[TurnView] = []
    full_left = 0 if brief else detail.full
    listed_left = detail.candidate_turns if brief else detail.listed
    for turn in reversed(turns):
        view = _turn_view(turn, files.get(turn.index, ()), detail, brief=brief)
        if not view.brief and views and _size(view) > full_left:
            full_left = 0  # earlier turns are brief too: the full ones are the latest run
            view = _turn_view(turn, files.get(turn.index, ()), detail, brief=True)
        size = _size(view)
        if size > listed_left and views:
            break
        full_left -= 0 if view.brief else size
        listed_left -= size
        views.append(view)
    return TurnList(tuple(reversed(views)), len(turns) - len(views))


def _size(view: TurnView) -> int:
    """About how many characters `view` takes in a prompt."""
    calls = sum(len(call.command) + len(call.output) + 20 for call in view.calls)
    return 40 + len(view.text) + calls + sum(len(path) + 2 for path in view.files)


def _turn_view(turn: Turn, files: Sequence[str], detail: Detail, *, brief: bool) -> TurnView:
    shown = BRIEF_FILES if brief else FILES_PER_TURN
    return TurnView(
        index=turn.index,
        author=turn.author,
        text="" if brief else head(without_shell_blocks(turn.text), detail.text),
        calls=tuple(_call_view(call, detail, brief=brief) for call in turn.calls),
        files=tuple(files[:shown]),
        more_files=max(len(files) - shown, 0),
        format_error=turn.format_error,
        brief=brief,
    )


def _call_view(call: CallRecord, detail: Detail, *, brief: bool) -> CallView:
    status = "timed out" if call.timed_out else f"exit {call.exit_code}"
    if brief:
        shown = min(BRIEF_COMMAND_CHARS, detail.command)
        return CallView(head(" ".join(call.command.split()), shown), status, "")
    return CallView(
        head(call.command.strip(), detail.command),
        status,
        tail(call.output.strip(), detail.output) or "(no output)",
    )


@dataclass(frozen=True)
class DiagnosticsView:
    summary: str
    failing: tuple[tuple[str, str], ...]
    """(test name, message) of failed and errored tests, capped."""
    more_failing: int
    required_missing: tuple[str, ...]
    log_tail: str


def diagnostics_view(
    diagnostics: Mapping[str, Any] | None, detail: Detail = FULL
) -> DiagnosticsView:
    """The verifier's findings as stored (`Diagnostics.to_json()`), capped for a prompt."""
    data = diagnostics or {}
    failing = [
        (
            head(str(test.get("name", "?")), 200),
            head(str(test.get("message", "")), detail.test_message),
        )
        for test in data.get("tests", ())
        if isinstance(test, Mapping) and test.get("outcome") in ("failed", "error")
    ]
    shown = detail.failing_tests
    return DiagnosticsView(
        summary=head(str(data.get("summary") or "no diagnostics were stored"), detail.summary),
        failing=tuple(failing[:shown]),
        more_failing=max(len(failing) - shown, 0),
        required_missing=tuple(str(name) for name in data.get("required_missing", ()))[:20],
        log_tail=tail(
            str(data.get("log_tail") or "").strip(),
            detail.log_tail_with_tests if failing else detail.log_tail,
        ),
    )


def outcome(attempt: Attempt) -> str:
    """How an attempt ended, in a few words: "reward 0 (submitted)", "running"."""
    if attempt.reward is None:
        return attempt.status if attempt.status != "running" else "running, not verified yet"
    return f"reward {attempt.reward:g} ({attempt.status})"


@dataclass(frozen=True)
class CandidateView:
    """A failed attempt as the reviewer reads it: its outcome, its analysis, its own turns."""

    id: int
    boundary: int
    origin: str
    """"a root" or "a branch of attempt 3 at boundary 5"."""
    outcome: str
    end_reason: str
    last: int
    summary: str
    analysis: dict[str, Any] | None
    """why_failed, keep (capped), boundaries, source."""
    inherited_from: int | None
    """When set, turns 1..boundary are that candidate's and are listed there, not here."""
    path: TurnList


def candidate_view(
    attempt: Attempt,
    last: int,
    turns: Sequence[Turn],
    files: Mapping[int, Sequence[str]],
    analysis: Analysis | None,
    *,
    parent_listed: bool,
    verifier: bool = True,
    detail: Detail = FULL,
) -> CandidateView:
    """`attempt` for the reviewer; `turns` is its whole path, shown from its own first turn
    when its parent is listed too (so a shared prefix is read once). With `verifier=False`
    (Shepherd's supervisor) nothing the verifier said is in the view: no summary, no
    reward, only that the attempt ended."""
    own = [t for t in turns if t.index > attempt.boundary] if parent_listed else list(turns)
    origin = (
        "a root"
        if attempt.parent_id is None
        else f"a branch of attempt {attempt.parent_id} at boundary {attempt.boundary}"
    )
    return CandidateView(
        id=attempt.id,
        boundary=attempt.boundary,
        origin=origin,
        outcome=outcome(attempt) if verifier else attempt.status,
        end_reason=head(attempt.end_reason or "", 300),
        last=last,
        summary=head(str((attempt.diagnostics or {}).get("summary") or ""), detail.summary)
        if verifier
        else "",
        analysis=None
        if analysis is None
        else {
            "why_failed": head(analysis.why_failed, detail.analysis),
            "keep": head(analysis.keep, detail.analysis),
            "boundaries": list(analysis.boundaries),
            "source": analysis.source,
        },
        inherited_from=attempt.parent_id if parent_listed else None,
        path=turn_list(own, files, detail, brief=True),
    )


@dataclass(frozen=True)
class BranchView:
    """An earlier branch and how it ended, for the reviewer's history."""

    id: int
    round: int
    parent_id: int | None
    boundary: int
    starting_turn: str | None
    outcome: str


def branch_view(attempt: Attempt, detail: Detail = FULL) -> BranchView:
    turn = attempt.starting_turn
    return BranchView(
        id=attempt.id,
        round=attempt.round,
        parent_id=attempt.parent_id,
        boundary=attempt.boundary,
        starting_turn=None if turn is None else head(turn.strip(), detail.starting_turn),
        outcome=outcome(attempt),
    )
