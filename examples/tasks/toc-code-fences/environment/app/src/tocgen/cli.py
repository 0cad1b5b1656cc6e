"""The `tocgen` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tocgen.toc import insert_toc, table_of_contents


def _levels(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tocgen")
    parser.add_argument("file", type=Path)
    parser.add_argument("--write", action="store_true", help="write it between the markers")
    parser.add_argument("--levels", type=_levels, default=(2, 3), metavar="LOW-HIGH")
    args = parser.parse_args(argv)
    text = args.file.read_text(encoding="utf-8")
    toc = table_of_contents(text, args.levels)
    if not args.write:
        print(toc, end="")
        return 0
    try:
        args.file.write_text(insert_toc(text, toc), encoding="utf-8")
    except ValueError as error:
        print(f"tocgen: {args.file}: {error}", file=sys.stderr)
        return 1
    return 0
