"""How an attempt stops in the middle of the actor's loop.

Both exceptions are control flow, not errors, and both are caught once, in `Actor.run`.
`AttemptEnded` is raised wherever the attempt is found over (a limit, the submit
sentinel, a model that failed, token ids that do not add up), and `run` records the end;
`Interrupted` when the run is stopping, and the attempt stays `running` for `--resume`.
They live below the actor so that the modules it uses can end an attempt too without
importing it. A crash of sprout itself is caught in `run` as well: `crash_reason` is what
its end records (and what the search runner records of a schedule's crash).
"""

from __future__ import annotations

import traceback

from sprout.tree import AttemptStatus, Fault


class AttemptEnded(Exception):
    """Control flow that ends an attempt, carrying the status, the reason and (for status
    `error`) the fault to record."""

    def __init__(self, status: AttemptStatus, reason: str, fault: Fault | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.fault = fault


class Interrupted(Exception):
    """The run is stopping (Ctrl-C, a server that fails every call): the attempt stays
    `running` at its last committed turn, for `--resume`."""


def model_failed(name: str, problem: object) -> AttemptEnded:
    """The end of an attempt whose model `name` failed it (no reply, ids that do not extend
    the context): an `error` with a `model` fault, never the model's failure at the task."""
    return AttemptEnded("error", f"model {name}: {problem}", "model")


def crash_reason(error: BaseException, where: str) -> str:
    """What to record of a crash of sprout itself `where` (`turn 3`, `schedule`): the
    error, then the traceback's last frames, so the bug can be reported without a rerun."""
    frames = traceback.format_exception(type(error), error, error.__traceback__)
    trace = "".join(frames[-4:-1]).rstrip()[-1500:]
    return f"sprout crashed in {where}: {type(error).__name__}: {error}\n{trace}"
