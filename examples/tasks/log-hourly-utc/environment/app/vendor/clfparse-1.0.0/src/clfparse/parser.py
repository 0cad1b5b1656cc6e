"""One line of the Common Log Format:

    HOST IDENT USER [DD/Mon/YYYY:HH:MM:SS +ZZZZ] "METHOD PATH PROTOCOL" STATUS SIZE

HOST is a host name or an IPv4 address.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

LINE = re.compile(
    r"(?P<host>[\w.-]+) (?P<ident>\S+) (?P<user>\S+) \[(?P<time>[^\]]+)\] "
    r'"(?P<method>[A-Z]+) (?P<path>\S+) (?P<protocol>[^"]+)" (?P<status>\d{3}) (?P<size>\d+|-)$'
)


class ParseError(ValueError):
    """A line that is not in the Common Log Format."""


@dataclass(frozen=True)
class Record:
    host: str
    user: str | None
    time: datetime.datetime
    """As logged, with the line's UTC offset (an aware datetime)."""
    method: str
    path: str
    status: int
    size: int | None


def parse_line(line: str) -> Record:
    """The record of one log line; ParseError when it does not match."""
    match = LINE.match(line.strip())
    if match is None:
        raise ParseError(f"not a Common Log Format line: {line.strip()[:80]!r}")
    fields = match.groupdict()
    try:
        time = datetime.datetime.strptime(fields["time"], "%d/%b/%Y:%H:%M:%S %z")
    except ValueError:
        raise ParseError(f"bad time {fields['time']!r}") from None
    return Record(
        host=fields["host"],
        user=None if fields["user"] == "-" else fields["user"],
        time=time,
        method=fields["method"],
        path=fields["path"],
        status=int(fields["status"]),
        size=None if fields["size"] == "-" else int(fields["size"]),
    )
