"""The reviewer: plans a round's branches from the analyses and the earlier branches' outcomes.

For each branch it picks a parent among the failed attempts, a boundary, and
writes the starting turn in the actor's voice: the only thing a schedule passes
on to the actor. Analyses and the reviewer's reasons stay in the run database. Its
prompt holds every candidate's analysis and as much of the attempts' turns and
the earlier branches as the model's window leaves (`sprout.roles.fit`).

The same role without the verifier (`reads_verifier=False`) is the supervisor
of the Shepherd baseline: it reads the failed trace, not the diagnostics nor any
analysis, and its fallback reads the trace alone (`trace_review`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sprout.agent.parse import FormatError, parse_calls
from sprout.fences import shell_blocks
from sprout.models import Model
from sprout.roles.ask import Recorder, consult
from sprout.roles.detail import REVIEWER_LADDER, Detail
from sprout.roles.fit import budget_for, fit
from sprout.roles.heuristics import heuristic_review, trace_review
from sprout.roles.output import MAX_PROBLEMS, OutputError, read_reply
from sprout.roles.prompts import render
from sprout.roles.touched import turn_files
from sprout.roles.types import Analysis, BranchPlan, Review, RoleError
from sprout.roles.views import CandidateView, branch_view, candidate_view, head
from sprout.task import Task
from sprout.tree import Attempt, RolloutTree, Turn, boundary_problem

STARTING_TURN_MAX = 8_000
"""Characters a starting turn may hold: it enters the actor's context, so it stays short."""


class PlanReply(BaseModel):
    """One branch in the reviewer's reply."""

    model_config = ConfigDict(strict=True, extra="ignore")

    parent: int
    """The id of the failed attempt to branch from."""
    boundary: int
    starting_turn: str = Field(min_length=1, max_length=STARTING_TURN_MAX)
    reason: str = Field("", max_length=2_000)


class ReviewerReply(BaseModel):
    """The JSON object the reviewer's model must reply with."""

    model_config = ConfigDict(strict=True, extra="ignore")

    branches: list[PlanReply] = Field(min_length=1)
    """Exactly as many as asked; extra ones are dropped, too few are refused."""


class Reviewer:
    """Plans branches for one run with one model."""

    def __init__(
        self,
        model: Model,
        tree: RolloutTree,
        *,
        call_format: str = "bash_blocks",
        max_calls_per_turn: int = 4,
        max_retries: int = 2,
        template: str | None = None,
        reads_verifier: bool = True,
        on_fallback: Callable[[str], None] | None = None,
    ) -> None:
        """`reads_verifier=False` makes it Shepherd's supervisor (see the module docstring)."""
        if max_retries < 0:
            raise RoleError(f"max_retries: expected 0 or more, got {max_retries}")
        if max_calls_per_turn < 1:
            raise RoleError(f"max_calls_per_turn: expected 1 or more, got {max_calls_per_turn}")
        self.model = model
        self.tree = tree
        self.call_format = call_format
        self.max_calls = max_calls_per_turn
        self.max_retries = max_retries
        self.template = template
        self.on_fallback = on_fallback
        """Told why whenever the heuristic answers for a model that could not."""
        self.reads_verifier = reads_verifier

    def review(
        self,
        task: Task,
        *,
        method: str,
        round: int,
        branches: int,
        candidates: Sequence[Attempt],
        analyses: Mapping[int, Analysis],
    ) -> Review:
        """Plan exactly `branches` branches, parents among `candidates` (the task's failed
        attempts under `method`); stored before it is returned. A review already stored for
        (task, method, round) is returned as it is, without calling the model."""
        stored = self.tree.reviews(task.id, method).get((method, round))
        if stored is not None:
            return Review.from_json(stored)
        if branches < 1:
            raise RoleError(f"branches: expected 1 or more, got {branches}")
        if not candidates:
            raise RoleError(f"task {task.id!r}: no failed attempt to branch from")
        parents = {a.id: self.tree.attempt(a.id) for a in candidates}
        strangers = [a.id for a in parents.values() if a.task_id != task.id]
        if strangers:
            raise RoleError(f"candidates {strangers} are not attempts of task {task.id!r}")
        lasts = {a.id: self.tree.last_index(a) for a in parents.values()}
        history = [
            a for a in self.tree.attempts(task.id) if a.method == method and a.kind == "branch"
        ]
        if not self.reads_verifier:
            analyses = {}
        tried = [(a.parent_id, a.boundary) for a in history if a.parent_id is not None]
        review = consult(
            self.model,
            lambda: self.prompt(task, parents, lasts, analyses, history, branches),
            read=lambda text: self._read(text, task, parents, lasts, history, branches),
            heuristic=lambda reason: self._heuristic(
                task, parents, analyses, branches, tried, reason
            ),
            as_reply=_as_reply,
            recorder=Recorder(self.tree, "reviewer", task.id, None, method, self.on_fallback),
            max_retries=self.max_retries,
        )
        self.tree.add_review(task.id, method, round, review.to_json())
        return review

    def _heuristic(
        self,
        task: Task,
        parents: Mapping[int, Attempt],
        analyses: Mapping[int, Analysis],
        branches: int,
        tried: list[tuple[int, int]],
        reason: str,
    ) -> Review:
        if self.reads_verifier:
            return heuristic_review(
                list(parents.values()),
                analyses,
                branches=branches,
                tried=tried,
                workdir=task.workdir,
                reason=reason,
            )
        return trace_review(
            {a.id: self.tree.path(a) for a in parents.values()},
            {a.id: self._files(a) for a in parents.values()},
            branches=branches,
            tried=tried,
            workdir=task.workdir,
            reason=reason,
        )

    def _files(self, attempt: Attempt) -> dict[int, list[str]]:
        return turn_files(self.tree, attempt)

    def prompt(
        self,
        task: Task,
        parents: Mapping[int, Attempt],
        lasts: Mapping[int, int],
        analyses: Mapping[int, Analysis],
        history: Sequence[Attempt],
        branches: int,
    ) -> str:
        """The reviewer's prompt: analyses, compact turn lists, earlier branches' outcomes, as
        detailed as the model's window allows (`sprout.roles.fit`); `PromptTooLong` when
        even its briefest is over it."""
        read = {a: (self.tree.path(parents[a]), self._files(parents[a])) for a in parents}

        def render_at(detail: Detail) -> str:
            return render(
                "reviewer" if self.reads_verifier else "supervisor",
                self.template,
                instruction=head(task.instruction.strip(), detail.instruction),
                workdir=task.workdir,
                candidates=self._candidates(parents, lasts, analyses, read, detail),
                history=[branch_view(a, detail) for a in history[-detail.history_branches :]],
                history_omitted=max(len(history) - detail.history_branches, 0),
                branches=branches,
                max_calls=self.max_calls,
                call_format=self.call_format,
            )

        role = "reviewer" if self.reads_verifier else "supervisor"
        return fit(render_at, REVIEWER_LADDER, budget_for(self.model), role)

    def _candidates(
        self,
        parents: Mapping[int, Attempt],
        lasts: Mapping[int, int],
        analyses: Mapping[int, Analysis],
        read: Mapping[int, tuple[list[Turn], dict[int, list[str]]]],
        detail: Detail,
    ) -> list[CandidateView]:
        """Each candidate as `detail` shows it, in id order; `read` holds its path and what
        each of its turns changed."""
        return [
            candidate_view(
                parents[attempt_id],
                lasts[attempt_id],
                *read[attempt_id],
                analyses.get(attempt_id) if self.reads_verifier else None,
                parent_listed=parents[attempt_id].parent_id in parents,
                verifier=self.reads_verifier,
                detail=detail,
            )
            for attempt_id in sorted(parents)
        ]

    def _read(
        self,
        text: str,
        task: Task,
        parents: Mapping[int, Attempt],
        lasts: Mapping[int, int],
        history: Sequence[Attempt],
        branches: int,
    ) -> Review:
        """The review in the model's reply; OutputError naming each plan's problems, so the
        model's retry can fix them all at once."""
        reply = read_reply(text, ReviewerReply)
        if len(reply.branches) < branches:
            raise OutputError(
                f"branches: the reply plans {len(reply.branches)}; plan exactly {branches}"
            )
        plans = reply.branches[:branches]
        failed = _failed_branches(history)
        planned: dict[Branch, int] = {}
        problems = []
        for n, plan in enumerate(plans):
            where = f"branches[{n}]"
            if plan.parent not in parents:
                problems.append(f"{where}.parent: {self._stranger(plan.parent, task, parents)}")
                continue
            problems += self._plan_problems(where, plan, lasts[plan.parent])
            key = (plan.parent, plan.boundary, _commands(plan.starting_turn))
            if key in failed:
                problems.append(
                    f"{where} repeats branch {failed[key]} (attempt {plan.parent}, boundary "
                    f"{plan.boundary}, the same commands), which failed; change the boundary "
                    "or the starting turn"
                )
            elif key in planned:
                problems.append(f"{where} repeats branches[{planned[key]}]; make each differ")
            planned.setdefault(key, n)
        if problems:
            more = len(problems) - MAX_PROBLEMS
            raise OutputError(
                "; ".join(problems[:MAX_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
            )
        return Review(
            tuple(
                BranchPlan(p.parent, p.boundary, p.starting_turn.strip(), p.reason.strip())
                for p in plans
            ),
            "model",
        )

    def _plan_problems(self, where: str, plan: PlanReply, last: int) -> list[str]:
        """What is wrong with one plan on its own, given its parent's last turn `last`: a
        boundary past it, or a starting turn the actor could not run."""
        problems = []
        if out_of_range := boundary_problem(plan.parent, plan.boundary, last):
            problems.append(f"{where}.boundary: {out_of_range}")
        try:
            parse_calls(
                None, plan.starting_turn, call_format=self.call_format, max_calls=self.max_calls
            )
        except FormatError as error:
            problems.append(
                f"{where}.starting_turn: {error}; write it as the agent would: brief "
                f"reasoning, then 1 to {self.max_calls} ```bash blocks"
            )
        return problems

    def _stranger(self, attempt_id: int, task: Task, parents: Mapping[int, Attempt]) -> str:
        """Why `attempt_id` cannot be a parent, and which ones can."""
        found = self.tree.find_attempt(attempt_id)
        if found is None:
            why = f"attempt {attempt_id} does not exist"
        elif found.task_id != task.id:
            why = f"attempt {attempt_id} belongs to another task"
        else:
            why = f"attempt {attempt_id} is not one of the failed attempts to branch from"
        return f"{why}; choose one of {', '.join(map(str, sorted(parents)))}"


Branch = tuple[int | None, int, tuple[str, ...]]
"""(parent, boundary, starting turn's commands): what makes two branches the same."""


def _failed_branches(history: Sequence[Attempt]) -> dict[Branch, int]:
    """The branches of `history` that were verified and failed, by what they tried: the
    reviewer must not plan one of them again."""
    return {
        (a.parent_id, a.boundary, _commands(a.starting_turn)): a.id
        for a in history
        if a.starting_turn is not None and a.failed
    }


def _commands(turn: str | None) -> tuple[str, ...]:
    """A starting turn's commands, whitespace-normalised: what makes two turns the same."""
    return tuple(" ".join(block.split()) for block in shell_blocks(turn or ""))


def _as_reply(review: Review) -> dict[str, Any]:
    return {
        "branches": [
            {
                "parent": plan.parent_id,
                "boundary": plan.boundary,
                "starting_turn": plan.starting_turn,
                "reason": plan.reason,
            }
            for plan in review.plans
        ]
    }
