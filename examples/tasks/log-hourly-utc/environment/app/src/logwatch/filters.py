"""Selecting records by status class."""

from __future__ import annotations

from collections.abc import Iterable

from clfparse import Record


def client_errors(records: Iterable[Record]) -> list[Record]:
    """Requests that failed because of the client (4xx)."""
    return [record for record in records if 400 <= record.status <= 499]


def server_errors(records: Iterable[Record]) -> list[Record]:
    """Requests that failed because of the server."""
    return [record for record in records if record.status == 500]
