"""What the analyst and the reviewer return, and how it is stored (plain JSON in the run database).

Stored bodies are read back through a pydantic adapter, so a body written by
one version is checked field by field when the next one resumes from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import TypeAdapter, ValidationError

from sprout.errors import SproutError

Source = Literal["model", "heuristic"]
"""`model`: the role's model wrote it; `heuristic`: the fallback did (see `fallback_reason`)."""


class RoleError(SproutError, ValueError):
    """A role was asked something it cannot answer (a running attempt, no candidates, a
    stored body that does not read back); the message names the input to fix."""


@dataclass(frozen=True)
class Analysis:
    """The analyst's reading of one failed attempt."""

    attempt_id: int
    why_failed: str
    keep: str
    """What the attempt got right and a branch should keep."""
    boundaries: tuple[int, ...]
    """Candidate boundaries, best first, each in 0..last index of the attempt."""
    source: Source
    fallback_reason: str | None = None
    """Why the heuristic wrote it: refused replies, a model error, or an oracle model."""

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt_id": self.attempt_id,
            "why_failed": self.why_failed,
            "keep": self.keep,
            "boundaries": list(self.boundaries),
            "source": self.source,
            "fallback_reason": self.fallback_reason,
        }

    @classmethod
    def from_json(cls, data: object) -> Analysis:
        """A stored analysis; RoleError names the first field that does not read back."""
        return _read(_ANALYSIS, data, "analysis")


@dataclass(frozen=True)
class BranchPlan:
    """One branch to start: from `parent`'s checkpoint `boundary`, with `starting_turn`."""

    parent_id: int
    boundary: int
    starting_turn: str | None
    """The first turn of the branch in the actor's voice; None: an unguided branch."""
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "parent_id": self.parent_id,
            "boundary": self.boundary,
            "starting_turn": self.starting_turn,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Review:
    """The reviewer's plan for one round of one schedule on one task."""

    plans: tuple[BranchPlan, ...]
    source: Source
    fallback_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "plans": [plan.to_json() for plan in self.plans],
            "source": self.source,
            "fallback_reason": self.fallback_reason,
        }

    @classmethod
    def from_json(cls, data: object) -> Review:
        """A stored review; RoleError names the first field that does not read back."""
        return _read(_REVIEW, data, "review")


T = TypeVar("T")
_ANALYSIS = TypeAdapter(Analysis)
_REVIEW = TypeAdapter(Review)


def _read(adapter: TypeAdapter[T], data: object, what: str) -> T:
    try:
        return adapter.validate_python(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise RoleError(f"stored {what}: {where}: {first['msg']}") from None
