"""What the actor says to the model and how it reads the replies: its dialect.

The loop (`actor.py`) is the same whoever wrote the prompts: ask, read the calls, run
them, seal, commit. What differs between sprout's own prompts and mini-swe-agent's
(`--agent-config`) is the messages before the first turn, the tools offered, how calls
are read out of a reply, what the context gains after a turn or a format error, and
when a call submits. Those five things are a `Dialect`; `dialect_for` picks one from
the actor's config, so the loop never asks which it speaks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sprout.agent.call_formats import format_error_messages, offered_tools, turn_messages
from sprout.agent.config import ActorConfig
from sprout.agent.limits import check_submitted
from sprout.agent.mini_dialect import MiniSweAgentDialect
from sprout.agent.parse import Calls, FormatError, parse_calls
from sprout.agent.prompts import render
from sprout.agent.state import TurnClock
from sprout.models import Completion
from sprout.tree import CallRecord, Message, Turn


class Dialect(Protocol):
    """One way of talking to the model; every method is pure but for its settings."""

    def prefix(self, instruction: str, workdir: str) -> list[Message]:
        """The messages before a root's first turn."""
        ...

    def tools(self) -> list[dict[str, Any]] | None:
        """The tools each model call offers (None: none)."""
        ...

    def calls(self, completion: Completion | None, text: str) -> Calls:
        """The calls `text` makes (`completion` is None for a reviewer's starting turn);
        `parse.FormatError` when they break the dialect's rules."""
        ...

    def command(self, command: str) -> str:
        """What the workspace runs for the model's `command`."""
        ...

    def stops_turn(self, record: CallRecord) -> bool:
        """Whether the turn's later calls are left unrun after `record`'s."""
        ...

    def turn_messages(
        self, text: str, calls: Calls, records: Sequence[CallRecord], at: TurnClock
    ) -> list[Message]:
        """What the context gains from a turn whose `calls` ran as `records`, ending `at`."""
        ...

    def format_error_messages(
        self, text: str, completion: Completion | None, error: FormatError
    ) -> list[Message]:
        """What the context gains from a turn whose calls could not be read."""
        ...

    def check_submitted(self, turn: Turn) -> None:
        """`AttemptEnded("submitted")` when `turn` submitted."""
        ...


class SproutDialect:
    """sprout's own prompts (`agent/templates`), fenced ```bash blocks or its `bash` tool."""

    def __init__(self, config: ActorConfig) -> None:
        self.config = config

    def _render(self, name: str, **context: Any) -> str:
        config = self.config
        return render(
            name,
            config.templates.model_dump(exclude_none=True),
            call_format=config.call_format,
            max_calls=config.max_calls_per_turn,
            submit_sentinel=config.submit_sentinel,
            **context,
        )

    def prefix(self, instruction: str, workdir: str) -> list[Message]:
        """The system prompt and the task."""
        return [
            {"role": "system", "content": self._render("system", workdir=workdir)},
            {
                "role": "user",
                "content": self._render("instance", instruction=instruction, workdir=workdir),
            },
        ]

    def tools(self) -> list[dict[str, Any]] | None:
        return offered_tools(self.config.call_format)

    def calls(self, completion: Completion | None, text: str) -> Calls:
        config = self.config
        return parse_calls(
            completion, text, call_format=config.call_format, max_calls=config.max_calls_per_turn
        )

    def command(self, command: str) -> str:
        return command

    def stops_turn(self, record: CallRecord) -> bool:
        """Never: every call of a turn runs, the submitting one included."""
        return False

    def turn_messages(
        self, text: str, calls: Calls, records: Sequence[CallRecord], at: TurnClock
    ) -> list[Message]:
        return turn_messages(text, calls, list(records), self._render)

    def format_error_messages(
        self, text: str, completion: Completion | None, error: FormatError
    ) -> list[Message]:
        """The reply and the format error: the model sees what it wrote and why it failed."""
        return format_error_messages(text, str(error), self._render)

    def check_submitted(self, turn: Turn) -> None:
        check_submitted(self.config, turn)


def dialect_for(config: ActorConfig, *, keeps_ids: bool) -> Dialect:
    """mini-swe-agent's protocol when the config carries its settings, else sprout's.
    `keeps_ids`: the model is trained on its exact token ids (see `MiniSweAgentDialect`)."""
    if config.mini_swe_agent is not None:
        return MiniSweAgentDialect(config, config.mini_swe_agent, keeps_ids=keeps_ids)
    return SproutDialect(config)
