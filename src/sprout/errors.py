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
