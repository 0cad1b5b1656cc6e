"""The `stockroom` command: `list` the inventory, `adjust` an item's quantity."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from stockroom.inventory import StockError, adjust, load, save
from stockroom.report import stock_table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stockroom")
    parser.add_argument("file", help="the inventory (JSON)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="every item")
    change = commands.add_parser("adjust", help="add (or, negative, remove) stock")
    change.add_argument("sku")
    change.add_argument("delta", type=int)
    args = parser.parse_args(argv)
    try:
        items = load(args.file)
        if args.command == "adjust":
            items = adjust(items, args.sku, args.delta)
            save(items, args.file)
    except (OSError, StockError) as error:
        print(f"stockroom: {error}", file=sys.stderr)
        return 2
    print(stock_table(items))
    return 0
