"""What every test-log parser shares: the four statuses, the parser's type, and the colour
codes taken out of a log before it is read."""

from __future__ import annotations

import re
from collections.abc import Callable

PASSED = "PASSED"
FAILED = "FAILED"
SKIPPED = "SKIPPED"
ERROR = "ERROR"
STATUSES = (PASSED, FAILED, SKIPPED, ERROR)

Statuses = dict[str, str]
"""Test name -> one of STATUSES, as the dataset's own harness names its tests."""
Parser = Callable[[str], Statuses]
"""A whole log (stdout, then stderr) in, each test's status out."""

_ANSI = re.compile(r"\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")


def strip_ansi(text: str) -> str:
    """`text` without terminal escape sequences (colours, cursor moves)."""
    return _ANSI.sub("", text)
