"""What the actor keeps while it plays an attempt: the context so far and its running
totals, and the reply of the turn being played."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sprout.agent.token_ids import TurnIds, extend
from sprout.models import Completion
from sprout.tree import Attempt, Author, Message, Turn

Clock = Callable[[], float]
"""Seconds from an arbitrary origin that never goes back (`time.monotonic`): the actor times
turns with one it is given, so tests can drive its wall-time limit with a fake one."""


@dataclass(frozen=True)
class Reply:
    """One turn's reply before its calls run: who wrote it, its text, when the turn started
    and, for the actor's turns, the completion it came in and its token ids."""

    author: Author
    text: str
    started: float
    """The actor's clock when the turn began: before its model call (a reviewer's starting
    turn has none), so the turn's duration counts the model's time too."""
    completion: Completion | None = None
    ids: TurnIds | None = None


@dataclass(frozen=True)
class TurnClock:
    """Where a turn stands when its messages are written: what a dialect's templates may
    count (mini-swe-agent's `n_model_calls` and `elapsed_seconds`)."""

    index: int
    """The turn's number in its attempt: the model calls its context has cost."""
    elapsed_s: float
    """Seconds the attempt has played, this turn's so far included."""


@dataclass
class AttemptState:
    """An attempt being played: its context so far and the running totals its limits read,
    kept as turns are played rather than read back from the run database at every turn."""

    attempt: Attempt
    messages: list[Message]
    index: int
    """The last turn boundary played (committed, or `held`)."""
    ids: list[int] | None = None
    """The context's token ids up to the last reply (None: the model keeps none)."""
    spent: int = 0
    """Tokens of every model call of the attempt (prompt and completion)."""
    context: int = 0
    """Tokens of the context the last model call held (prompt and completion)."""
    elapsed: float = 0.0
    """Seconds of the attempt's own turns."""
    format_errors: int = 0
    """Turns in a row, up to the last, whose calls could not be read."""
    held: Turn | None = None
    """The turn played last, sealed but not committed yet (see `Actor._play`)."""

    def played(self, turn: Turn, messages: Sequence[Message], ids: TurnIds | None) -> None:
        """Move on past `turn`, just sealed, which added `messages` and `ids`."""
        self.messages.extend(messages)
        self.index = turn.index
        self.ids = extend(self.ids, ids)
        self.elapsed += turn.duration_s
        self.format_errors = self.format_errors + 1 if turn.format_error else 0
        if turn.prompt_tokens or turn.completion_tokens:
            self.context = turn.prompt_tokens + turn.completion_tokens
