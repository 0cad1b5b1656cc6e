"""`sprout shell RUN ATTEMPT:k`: an interactive shell in a throw-away fork of a checkpoint.

A `--ray` run's checkpoints are in its nodes' stores. Where this machine can read one
(it is the node, or the stores are on a shared filesystem) the shell forks there; where
it cannot, `--ray ADDRESS` ships the checkpoint's layers from the node that holds them
into the run folder's own store, as a moved task's layers are shipped (`sprout.cluster.ship`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sprout.commands.common import UsageError
from sprout.commands.ray_options import joined
from sprout.runfolder import RunFolder, RunFolderError
from sprout.sandbox import LayerStore, Sandbox, UnknownCheckpoint
from sprout.tree import CheckpointRef


def add_parser(commands: Any) -> None:
    shell = commands.add_parser(
        "shell",
        help="an interactive shell in a throw-away fork of any stored checkpoint",
        description="Open a shell in a throw-away fork of checkpoint ATTEMPT:k of a run "
        "(k = 0 is the untouched task; ATTEMPT alone means its last turn). "
        "Nothing you do there is saved.",
    )
    shell.add_argument("run", metavar="RUN", help="run folder (holds sprout.db and layers/)")
    shell.add_argument("checkpoint", metavar="ATTEMPT:k", help="attempt id and turn boundary")
    shell.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="a --ray run whose node stores this machine cannot read: ship the checkpoint "
        "from its node on the cluster at ADDRESS (auto, or HOST:PORT) into RUN/layers",
    )
    shell.set_defaults(func=cmd_shell)


def cmd_shell(args: argparse.Namespace) -> int:
    ref = CheckpointRef.parse(args.checkpoint)
    run = RunFolder.open(args.run)
    try:
        tree = run.tree
        attempt = tree.attempt(ref.attempt)
        boundary = tree.last_index(attempt) if ref.boundary is None else ref.boundary
        checkpoint = tree.checkpoint(attempt, boundary)
        try:
            layers = checkpoint_store(run, attempt.task_id, checkpoint, args.ray)
            sandbox = Sandbox.fork(layers, checkpoint)
        except UnknownCheckpoint as error:
            raise UsageError(
                f"{args.checkpoint}: its layer {error.checkpoint_id} is gone from "
                f"{run.layers.path} (freed by a gc, or the store was moved); the turns are "
                "still in sprout.db, their files are not"
            ) from None
        with sandbox:
            print(
                f"sprout shell: attempt {attempt.id} after turn {boundary} (layer {checkpoint}), "
                f"in {sandbox.config.workdir}; a throw-away fork: changes go when you exit",
                file=sys.stderr,
            )
            return sandbox.shell()
    finally:
        run.close()


def checkpoint_store(run: RunFolder, task_id: str, checkpoint: str, ray: str | None) -> LayerStore:
    """The store to fork `checkpoint` of task `task_id` from: where it can be read here, else
    (with `ray`, a cluster's address) the run folder's own, once the checkpoint is shipped
    into it from a node of the cluster that still holds it."""
    try:
        return run.store_of(task_id, checkpoint)
    except RunFolderError as error:
        if ray is None:
            raise UsageError(f"{error}; give --ray ADDRESS to ship it here from its node") from None
        unreadable = str(error)
    from sprout.cluster import fetch

    with joined(ray):
        for placement in reversed(run.placements(task_id)):
            if fetch(placement.node, placement.store, run.layers, checkpoint):
                return run.layers
    raise UsageError(f"{unreadable}, and no node of the cluster at {ray} holds it any more")
