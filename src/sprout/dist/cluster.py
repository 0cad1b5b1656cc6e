"""Joining a Ray cluster for `sprout run --ray`, and leaving it."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import ray

from sprout.dist.sandboxes import Placement, RaySandboxes


def connect(address: str) -> None:
    """Join the cluster at `address`: `auto` finds the one `ray start` runs here, `local`
    starts one on this machine with its cores and memory, else `HOST:PORT` or `ray://...`."""
    ray.init(
        address=None if address == "local" else address,
        include_dashboard=False,
        log_to_driver=False,  # the workers' lines would interleave with the progress lines
        logging_level=logging.WARNING,
    )


def disconnect() -> None:
    """Leave the cluster (and stop it, when `connect` started it)."""
    ray.shutdown()


def default_store(run_folder: str) -> str:
    """Each node's store for a run: under the node's temporary folder, one per run folder,
    `{node}` left for the node to fill in."""
    run = hashlib.sha256(os.path.realpath(run_folder).encode()).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), "sprout-ray", run, "{node}")


@contextmanager
def on_cluster(
    address: str, store: str, cpus: float, record: Callable[[list[Placement]], None]
) -> Iterator[RaySandboxes]:
    """A run's sandboxes on the cluster at `address`; every task's actor ended and the
    cluster left (or stopped, for `local`) when the block ends, however it ends."""
    connect(address)
    try:
        sandboxes = RaySandboxes(store, cpus, record)
        try:
            yield sandboxes
        finally:
            sandboxes.close()
    finally:
        disconnect()
