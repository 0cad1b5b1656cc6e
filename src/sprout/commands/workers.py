"""`--workers N|auto` of `sprout run` and `sprout train`: how many sandboxes run at once.

A number is kept as given. `auto` fills the room the sandboxes have: this machine's cores
and memory, or with `--ray` the cluster's alive nodes', over what each attempt holds
(`sprout.tasksandbox.room`). Without the option a run has one sandbox at a time here and
fills the cluster with `--ray`: a cluster is there to be used.
"""

from __future__ import annotations

import argparse

from sprout.commands.common import UsageError

AUTO = "auto"


def add_workers_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """`--workers`; `what` says what runs side by side, in the command's words."""
    parser.add_argument(
        "--workers",
        metavar="N|auto",
        help=f"sandboxes running at once: {what}; auto: as many as this machine, or with "
        "--ray the cluster, has cores and memory for (default 1, and auto with --ray)",
    )


def workers(args: argparse.Namespace) -> int | None:
    """The number of sandboxes at once (the run's settings refuse one below 1); None: as
    many as there is room for."""
    text = args.workers
    if text is None:
        return None if args.ray is not None else 1
    if text == AUTO:
        return None
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--workers {text}: expected a number or auto") from None
