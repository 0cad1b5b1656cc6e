"""`--ray`, `--ray-store`, `--ray-cpus` and `--ray-memory`: where the sandboxes of
`sprout run` and `sprout train` run, one set of options with one set of checks, so that
both commands refuse the same mistakes with the same lines and go to a cluster the same
way."""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from sprout.commands.common import UsageError
from sprout.runfolder import RunFolder
from sprout.tasks.sources.harbor_tables import Size
from sprout.tree import Placement, RayPlacements, RunMeta

if TYPE_CHECKING:
    from sprout.tasksandbox import TaskSandboxes


def add_ray_address(parser: argparse.ArgumentParser, what: str, after: str) -> None:
    """--ray [ADDRESS]: `what` runs on the nodes of a Ray cluster; `after` ends the help."""
    parser.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help=f"{what} on a node of a Ray cluster: auto (the one `ray start` runs here; the "
        "default of a bare --ray), local (start one on this machine), or HOST:PORT" + after,
    )


def require_ray() -> None:
    """--ray was given: Ray must be installed, or the line says how to install it."""
    if importlib.util.find_spec("ray") is None:
        raise UsageError("--ray: Ray is not installed; pip install 'sprout-rl[dist]'")


def add_ray_arguments(parser: argparse.ArgumentParser, guide: str) -> None:
    """Where the sandboxes run: this machine (default) or the nodes of a Ray cluster;
    `guide` is the page of docs/ that tells more (the command's own)."""
    add_ray_address(parser, "run each task's sandboxes", f"; the run folder stays here ({guide})")
    parser.add_argument(
        "--ray-store",
        metavar="DIR",
        help="with --ray: each node's layer store, {node} standing for the node's id "
        "(default: TMP/sprout-ray/RUN/{node} on each node)",
    )
    parser.add_argument(
        "--ray-cpus",
        type=float,
        default=1.0,
        metavar="N",
        help="with --ray: cores Ray reserves per task, and its commands run at once (default 1)",
    )
    parser.add_argument(
        "--ray-memory",
        metavar="SIZE",
        help="with --ray: memory Ray reserves per task, e.g. 512M or 8G, 0 for none; a node "
        "holds no more tasks than it has memory for (default: the task's sandbox memory "
        "limit times --ray-cpus' commands at once)",
    )


def check_ray(args: argparse.Namespace) -> None:
    """--ray's options, checked before the run folder is touched."""
    if args.ray is None:
        for given, option in ((args.ray_store, "--ray-store"), (args.ray_memory, "--ray-memory")):
            if given is not None:
                raise UsageError(f"{option}: only with --ray")
        return
    require_ray()
    if args.ray_store is not None and "{node}" not in args.ray_store:
        raise UsageError(
            f"--ray-store {args.ray_store}: needs {{node}} in it, so that each node of the "
            "cluster (several may share a machine) has its own store"
        )
    if not args.ray_cpus > 0:
        raise UsageError(f"--ray-cpus: expected a number of cores above 0, got {args.ray_cpus}")
    ray_memory(args)


def ray_memory(args: argparse.Namespace) -> int | None:
    """--ray-memory in bytes (0 reserves none); None: each task's own default."""
    text = args.ray_memory
    if text is None:
        return None
    if text.strip() == "0":
        return 0
    try:
        return int(TypeAdapter(Size).validate_python(text))
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
        raise UsageError(
            f"--ray-memory {text}: {problem} (a size such as 8G or 512M, or 0 for none)"
        ) from None


@contextmanager
def on_cluster(args: argparse.Namespace) -> Iterator[None]:
    """On --ray's cluster for the block (nothing without --ray); a cluster that cannot be
    joined is a UsageError."""
    if args.ray is None:
        yield
        return
    with joined(args.ray):
        yield


@contextmanager
def joined(address: str) -> Iterator[None]:
    """On the cluster at `address` for the block (`sprout.cluster.join`'s addresses); one that
    cannot be joined is a UsageError."""
    from sprout.cluster import ClusterError, join, leave

    try:
        join(address)
    except ClusterError as error:
        raise UsageError(str(error)) from None
    try:
        yield
    finally:
        leave()


@contextmanager
def ray_sandboxes(args: argparse.Namespace, run: RunFolder) -> Iterator[TaskSandboxes | None]:
    """Where the tasks' sandboxes run: None (the run folder's store) without --ray; with it,
    the run's meta (`ray`) keeps the placement log, a resumed run's earlier placements tell
    where its checkpoints are, and every task's actor is ended when the block ends."""
    if args.ray is None:
        yield None
        return
    from sprout.cluster import RaySandboxes, default_store

    def record(placements: list[dict[str, Any]]) -> None:
        placed = [Placement.model_validate(placement) for placement in placements]
        ray = RayPlacements(address=args.ray, placements=placed)
        run.tree.update_meta(RunMeta(ray=ray))

    store = args.ray_store or default_store(args.out)
    ray = run.tree.meta().ray  # a resumed run's placements
    earlier = [] if ray is None else [placement.to_json() for placement in ray.placements]
    memory = ray_memory(args)
    with closing(RaySandboxes(store, args.ray_cpus, record, earlier, memory=memory)) as sandboxes:
        yield sandboxes
