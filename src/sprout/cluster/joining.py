"""Joining a Ray cluster for `sprout run --ray`, and leaving it."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile

import ray

from sprout.errors import SproutError


class ClusterError(SproutError, ValueError):
    """A cluster that cannot be joined: the address is wrong, or nothing runs there."""


def join(address: str) -> None:
    """Join the cluster at `address`: `auto` finds the one `ray start` runs here, `local`
    starts one on this machine with its cores and memory (stopped by `leave`), else
    `HOST:PORT` or `ray://...`.

    `local` is Ray's own "local", never its default (None), which joins whatever cluster
    this machine last started (`ray start` and `ray.cluster_utils` leave its address in
    `/tmp/ray/ray_current_cluster`). Ray turns its token authentication on for the whole
    process when it starts a local instance (unless RAY_AUTH_MODE says otherwise) and keeps
    it on after `leave`: a cluster started without it then cancels every actor this process
    creates, so one process joins `local` or clusters without it, not both."""
    try:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,  # the workers' lines would interleave with the progress lines
            logging_level=logging.WARNING,
        )
    except (ConnectionError, TimeoutError, ValueError) as error:
        lines = str(error).strip().splitlines() or [type(error).__name__]
        raise ClusterError(f"--ray {address}: cannot join the cluster: {lines[0]}") from None


def leave() -> None:
    """Leave the cluster `join` joined (and stop it, when `join` started it)."""
    ray.shutdown()


def default_store(run_folder: str) -> str:
    """Each node's store for a run: under the temporary folder (as this machine names it;
    `/tmp` on most), one per run folder, `{node}` left for the node to fill in."""
    run = hashlib.sha256(os.path.realpath(run_folder).encode()).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), "sprout-ray", run, "{node}")
