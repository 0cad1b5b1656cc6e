"""The analyst: reads one failed attempt and says why it failed, what to keep, and where to
resume.

It reads the whole path (inherited turns included), what each turn's checkpoint
changed, the patch and the verifier's diagnostics, as much of them as the model's
window holds (`sprout.roles.fit`). Its analysis goes to the run database and to the
reviewer only: it never enters the actor's context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sprout.models import Model
from sprout.roles.ask import Recorder, consult
from sprout.roles.detail import ANALYST_LADDER, Detail
from sprout.roles.fit import budget_for, fit
from sprout.roles.heuristics import MAX_BOUNDARIES, heuristic_analysis
from sprout.roles.output import OutputError, read_reply
from sprout.roles.prompts import render
from sprout.roles.touched import turn_files
from sprout.roles.types import Analysis, RoleError
from sprout.roles.views import diagnostics_view, ends, head, turn_list
from sprout.task import Task
from sprout.tree import Attempt, RolloutTree, Turn


class AnalystReply(BaseModel):
    """The JSON object the analyst's model must reply with."""

    model_config = ConfigDict(strict=True, extra="ignore")

    why_failed: str = Field(min_length=1, max_length=4_000)
    keep: str = Field(max_length=4_000)
    boundaries: list[int] = Field(min_length=1)
    """Best first; duplicates are dropped and only the first MAX_BOUNDARIES kept."""


class Analyst:
    """Analyses failed attempts of one run with one model."""

    def __init__(
        self,
        model: Model,
        tree: RolloutTree,
        *,
        call_format: str = "bash_blocks",
        max_retries: int = 2,
        template: str | None = None,
        on_fallback: Callable[[str], None] | None = None,
    ) -> None:
        if max_retries < 0:
            raise RoleError(f"max_retries: expected 0 or more, got {max_retries}")
        self.model = model
        self.tree = tree
        self.call_format = call_format
        self.max_retries = max_retries
        self.template = template
        self.on_fallback = on_fallback
        """Told why whenever the heuristic answers for a model that could not."""

    def analyse(self, task: Task, attempt: Attempt) -> Analysis:
        """The analysis of `attempt` (finished, its diagnostics stored), stored before it is
        returned; one already stored is returned as it is, without calling the model."""
        stored = self.tree.analyses(task.id).get(attempt.id)
        if stored is not None:
            return Analysis.from_json(stored)
        attempt = self.tree.attempt(attempt.id)
        _check(task, attempt)
        files = turn_files(self.tree, attempt)
        last = self.tree.last_index(attempt)
        analysis = consult(
            self.model,
            lambda: self.prompt(task, attempt, files, last),
            read=lambda text: _read(text, attempt.id, last),
            heuristic=lambda reason: heuristic_analysis(
                attempt, self.tree.path(attempt), files, task.workdir, reason
            ),
            as_reply=_as_reply,
            recorder=Recorder(
                self.tree,
                "analyst",
                task.id,
                attempt.id,
                attempt.method,
                self.on_fallback,
            ),
            max_retries=self.max_retries,
        )
        self.tree.add_analysis(task.id, attempt.id, analysis.to_json())
        return analysis

    def prompt(self, task: Task, attempt: Attempt, files: dict[int, list[str]], last: int) -> str:
        """The analyst's prompt for `attempt`, as detailed as the model's window allows
        (`sprout.roles.fit`); `PromptTooLong` when even its briefest is over it."""
        path = self.tree.path(attempt)
        return fit(
            lambda detail: self._render(task, attempt, path, files, last, detail),
            ANALYST_LADDER,
            budget_for(self.model),
            "analyst",
        )

    def _render(
        self,
        task: Task,
        attempt: Attempt,
        path: list[Turn],
        files: dict[int, list[str]],
        last: int,
        detail: Detail,
    ) -> str:
        return render(
            "analyst",
            self.template,
            instruction=head(task.instruction.strip(), detail.instruction),
            workdir=task.workdir,
            attempt=attempt,
            last=last,
            path=turn_list(path, files, detail),
            patch=ends(attempt.patch or "", detail.patch),
            diagnostics=diagnostics_view(attempt.diagnostics, detail),
            call_format=self.call_format,
            max_boundaries=MAX_BOUNDARIES,
        )


def _check(task: Task, attempt: Attempt) -> None:
    if attempt.task_id != task.id:
        raise RoleError(
            f"attempt {attempt.id} belongs to task {attempt.task_id!r}, not {task.id!r}"
        )
    if attempt.status == "running":
        raise RoleError(f"attempt {attempt.id} is still running; analyse it once it has ended")
    if attempt.diagnostics is None:
        raise RoleError(
            f"attempt {attempt.id} has no stored diagnostics; run the verifier on it first"
        )


def _read(text: str, attempt_id: int, last: int) -> Analysis:
    reply = read_reply(text, AnalystReply)
    wrong = [b for b in reply.boundaries if not 0 <= b <= last]
    if wrong:
        named = f"boundary {wrong[0]}" if len(wrong) == 1 else f"boundaries {wrong}"
        raise OutputError(f"{named} out of range for attempt {attempt_id} (0..{last})")
    return Analysis(
        attempt_id=attempt_id,
        why_failed=reply.why_failed.strip(),
        keep=reply.keep.strip(),
        boundaries=tuple(dict.fromkeys(reply.boundaries))[:MAX_BOUNDARIES],
        source="model",
    )


def _as_reply(analysis: Analysis) -> dict[str, Any]:
    return {
        "why_failed": analysis.why_failed,
        "keep": analysis.keep,
        "boundaries": list(analysis.boundaries),
    }
