"""The `pipewright` command: `order` prints the build order, `check` the unmet constraints."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pipewright.constraints import unmet
from pipewright.graph import build_order
from pipewright.workspace import WorkspaceError, load


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pipewright")
    parser.add_argument("command", choices=["order", "check"])
    parser.add_argument("workspace", nargs="?", default="workspace.toml")
    args = parser.parse_args(argv)
    try:
        packages = load(args.workspace)
    except (OSError, WorkspaceError) as error:
        print(f"pipewright: {args.workspace}: {error}", file=sys.stderr)
        return 2
    if args.command == "check":
        problems = unmet(packages)
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    for name in build_order(packages):
        print(name)
    return 0
