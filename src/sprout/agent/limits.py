"""When an attempt is over by its config's rules: a limit reached before the next model
call (`max_turns`, `max_tokens`, `max_context_tokens`, `max_format_errors_in_a_row`,
`max_wall_s`), or the submit
sentinel printed by a turn's call. Unset, `max_context_tokens` is the model's context
window when its client knows it (`sprout.models.window`).

Each ends the attempt with a reason naming the rule, so a run that stopped early tells
which setting to raise. The limits read the running totals of `AttemptState`, never the
run database, so checking them before every call costs nothing.
"""

from __future__ import annotations

from sprout.agent.config import ActorConfig
from sprout.agent.ending import AttemptEnded
from sprout.agent.state import AttemptState
from sprout.models.window import ContextWindow
from sprout.tree import Turn


def check_limits(
    config: ActorConfig, state: AttemptState, window: ContextWindow | None = None
) -> None:
    """End the attempt before the next model call when a limit is reached; the reason names
    the setting to raise. `window` is the model's, the context limit when none is set."""
    if state.index >= config.max_turns:
        raise AttemptEnded(
            "limit", f"turn limit (max_turns): {state.index} of {config.max_turns} turns"
        )
    if config.max_tokens is not None and state.spent >= config.max_tokens:
        raise AttemptEnded(
            "limit", f"token limit (max_tokens): {state.spent} of {config.max_tokens} spent"
        )
    limit, named = context_limit(config, window)
    if limit is not None and state.context >= limit:
        raise AttemptEnded("limit", f"context limit ({named}): {state.context} of {limit} tokens")
    streak = config.max_format_errors_in_a_row
    if streak is not None and state.format_errors >= streak:
        raise AttemptEnded(
            "limit",
            f"format errors in a row (max_format_errors_in_a_row): {state.format_errors}",
        )
    if config.max_wall_s is not None and state.elapsed >= config.max_wall_s:
        raise AttemptEnded(
            "limit",
            f"wall-time limit (max_wall_s): {state.elapsed:.1f} s of {config.max_wall_s:g} s",
        )


def context_limit(config: ActorConfig, window: ContextWindow | None) -> tuple[int | None, str]:
    """(the longest context an attempt may reach, what sets it): `max_context_tokens`, else
    the model's window, else no limit."""
    if config.max_context_tokens is not None or window is None:
        return config.max_context_tokens, "max_context_tokens"
    return window.tokens, f"max_context_tokens unset: {window.describe()}"


def check_submitted(config: ActorConfig, turn: Turn) -> None:
    """End the attempt when `turn` printed the submit sentinel first in a call's output."""
    sentinel = config.submit_sentinel
    if any(c.output.lstrip().partition("\n")[0].strip() == sentinel for c in turn.calls):
        raise AttemptEnded("submitted", f"turn {turn.index} printed {sentinel}")
