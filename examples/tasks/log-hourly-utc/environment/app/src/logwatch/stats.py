"""Counting requests: per hour, per path."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from clfparse import Record


def hour_of(record: Record) -> str:
    """The hour a request was made in: "YYYY-MM-DD HH:00"."""
    return record.time.strftime("%Y-%m-%d %H:00")


def hourly(records: Iterable[Record]) -> dict[str, int]:
    """Requests per hour, in time order."""
    counts = Counter(hour_of(record) for record in records)
    return dict(sorted(counts.items()))


def top_paths(records: Iterable[Record], n: int = 5) -> list[tuple[str, int]]:
    """The `n` most requested paths with their counts, most requested first."""
    counts = Counter(record.path for record in records)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
