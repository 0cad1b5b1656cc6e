"""The `logwatch` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import clfparse

from logwatch.filters import server_errors
from logwatch.reader import LogError, read_log
from logwatch.stats import hourly, top_paths


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="logwatch")
    parser.add_argument("log", help="an access log in the Common Log Format")
    parser.add_argument("--errors", action="store_true", help="count server errors only")
    parser.add_argument("--top", type=int, metavar="N", help="the N most requested paths")
    args = parser.parse_args(argv)
    try:
        records = read_log(args.log)
    except (LogError, clfparse.ParseError) as error:
        print(f"logwatch: {error}", file=sys.stderr)
        return 2
    if args.top:
        for path, count in top_paths(records, args.top):
            print(f"{count:6}  {path}")
        return 0
    if args.errors:
        records = server_errors(records)
    for hour, count in hourly(records).items():
        print(f"{hour}  {count}")
    return 0
