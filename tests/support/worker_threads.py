"""The threads each pytest-xdist worker's numeric libraries and llama-server start: the
machine's cores shared among the workers.

torch (through OpenMP) and llama.cpp start a thread per core and spin while one waits for
another; with two workers on two cores, a spinning thread waits for a core the other
worker holds. Beside one busy core, the llama.cpp rollout-server test took 115 s with
their defaults and 52 s with one thread each (38 s alone on two idle cores). Only where
the caller has not set them."""

from __future__ import annotations

import os

THREAD_VARIABLES = ("OMP_NUM_THREADS", "LLAMA_ARG_THREADS")
"""torch's and OpenMP's intra-op threads; llama-server's `--threads`."""


def share_cores(workers: int) -> str:
    """Set THREAD_VARIABLES for `workers` workers on this process's cores (inherited by the
    workers and all they start); what the header says of it."""
    per_worker = str(max(1, len(os.sched_getaffinity(0)) // workers))
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, per_worker)
    return ", ".join(f"{name}={os.environ[name]}" for name in THREAD_VARIABLES)
