"""The roles a schedule plays with: the analyst, the reviewer and Shepherd's supervisor, on
the actor's model with the run's settings, built only when a schedule asks for them
(`pass@k` and `entropy` ask for none)."""

from __future__ import annotations

from collections.abc import Callable

from sprout.agent import ActorConfig
from sprout.roles import Analyst, Reviewer, RolesConfig
from sprout.search.task_search import Search


class ScheduleRoles:
    """The roles of one search, each fallback to a heuristic told on its progress."""

    def __init__(self, search: Search, actor: ActorConfig, roles: RolesConfig) -> None:
        self.search = search
        self.actor = actor
        self.roles = roles

    def analyst_and_reviewer(self) -> tuple[Analyst, Reviewer]:
        """The analyst and the reviewer, which reads the verifier's diagnostics."""
        analyst = Analyst(
            self.search.actor.model,
            self.search.tree,
            call_format=self.actor.call_format,
            max_retries=self.roles.max_retries,
            template=self.roles.analyst_template,
            on_fallback=self._tell_fallback("analyst"),
        )
        return analyst, self._reviewer(reads_verifier=True)

    def supervisor(self) -> Reviewer:
        """Shepherd's supervisor: a reviewer that plans from the traces alone."""
        return self._reviewer(reads_verifier=False)

    def _reviewer(self, *, reads_verifier: bool) -> Reviewer:
        return Reviewer(
            self.search.actor.model,
            self.search.tree,
            call_format=self.actor.call_format,
            max_calls_per_turn=self.actor.max_calls_per_turn,
            max_retries=self.roles.max_retries,
            template=self.roles.reviewer_template
            if reads_verifier
            else self.roles.supervisor_template,
            reads_verifier=reads_verifier,
            on_fallback=self._tell_fallback("reviewer" if reads_verifier else "supervisor"),
        )

    def _tell_fallback(self, role: str) -> Callable[[str], None]:
        """A progress line each time `role`'s heuristic answers for a model that could not."""
        search = self.search

        def tell(reason: str) -> None:
            search.progress.event(
                search.task.id, search.method.name, f"{role} fell back to the heuristic: {reason}"
            )

        return tell
