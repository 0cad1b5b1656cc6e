"""The one base of the errors sprout raises on purpose.

Every such error is one line a user can act on, naming the file, field or argument at
fault first (`FILE: TABLE.FIELD: PROBLEM`, `--flag: PROBLEM`). Catching `SproutError`
is how the command line tells them from a bug of sprout's (a traceback), and how the
runner tells an error that ends one task's schedule from a crash. Signals that steer
control flow (an attempt that ended, a halt, a retry) are not errors and do not derive
from it. A leaf: it imports nothing of sprout, so every layer may use it.
"""

from __future__ import annotations

from typing import ClassVar

BAD_INPUT = 2
"""The exit code of bad input and of every error that ends a command before it did its
work: nothing that was already saved is lost, and the line says what to change."""


class SproutError(Exception):
    """An error a user can act on, told in one line."""

    exit_code: ClassVar[int] = BAD_INPUT
    """What `sprout` exits with when this error ends a command."""

    input_name: str | None
    """The file, field or argument at fault, apart from the line that tells it: what a
    program reading the error (results.json, a test, a wrapper script) points at."""

    def __init__(self, *args: object, input_name: str | None = None) -> None:
        """`input_name` names the input at fault; without it, the line's lead by the
        convention above (the text before its first ": ")."""
        super().__init__(*args)
        self.input_name = input_name if input_name is not None else named_input(args)

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as its class, line and attributes, not as a call of its `__init__`: a
        Ray node ships errors whose constructors take other arguments than their line
        (`BadArgument(argument, problem)`), which pickle's default rebuild cannot call."""
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(cls: type[SproutError], args: tuple[object, ...], state: dict[str, object]) -> object:
    """An error `cls` with `args` and `state` as it was pickled, its `__init__` not called."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


def named_input(args: tuple[object, ...]) -> str | None:
    """The input a one-line error names by the convention: its text before the first ": ",
    or None for a line that does not lead with one."""
    if not args or not isinstance(args[0], str):
        return None
    lead, colon, _ = args[0].partition(": ")
    return lead.strip() or None if colon else None
