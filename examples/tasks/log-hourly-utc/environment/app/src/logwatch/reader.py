"""Reading a log file into records, one per non-blank line."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import clfparse


class LogError(ValueError):
    """A log that cannot be read."""


def read_lines(lines: Iterable[str]) -> list[clfparse.Record]:
    """Every non-blank line as a record; a malformed line raises clfparse.ParseError."""
    return [clfparse.parse_line(line) for line in lines if line.strip()]


def read_log(path: str | Path) -> list[clfparse.Record]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise LogError(f"{path}: {error.strerror}") from None
    return read_lines(text.splitlines())
