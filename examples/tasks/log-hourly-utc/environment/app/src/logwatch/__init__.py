"""logwatch: hourly request counts and error summaries from access logs."""

from logwatch.filters import client_errors, server_errors
from logwatch.reader import LogError, read_log
from logwatch.stats import hour_of, hourly, top_paths

__all__ = [
    "LogError",
    "client_errors",
    "hour_of",
    "hourly",
    "read_log",
    "server_errors",
    "top_paths",
]
