"""A task's base layer: its image plus its set-up steps, built once and cached by content."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import Task, TaskError

SETUP_TIMEOUT_S = 1800.0


def _digest(task: Task) -> str:
    """A hash of everything the base layer depends on: image, steps, env and copied bytes."""
    digest = hashlib.sha256()
    digest.update(
        json.dumps(
            [
                task.image,
                task.workdir,
                task.env,
                task.network,
                [s.model_dump() for s in task.setup],
            ],
            sort_keys=True,
        ).encode()
    )
    for step in task.setup:
        if step.kind == "copy" and task.environment_dir is not None:
            source = task.environment_dir / step.source
            files = [source] if source.is_file() else sorted(p for p in source.rglob("*"))
            for file in files:
                digest.update(str(file.relative_to(task.environment_dir)).encode())
                if file.is_file() and not file.is_symlink():
                    digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def base_checkpoint(task: Task, layers: LayerStore) -> str:
    """Checkpoint 0 of `task`: built on first use, then reused by every run on `layers`.

    Set-up runs with the network; the checkpoint carries the task's `network`
    setting, which every fork of it (the agent's sandboxes) inherits.
    """
    name = f"base-{re.sub(r'[^A-Za-z0-9._-]', '_', task.id)[:80]}-{_digest(task)}"
    cached = layers.ref(name)
    if cached is not None:
        return cached
    with Sandbox.create(layers, image=task.image, workdir=task.workdir, env=task.env) as sandbox:
        for number, step in enumerate(task.setup, 1):
            if step.kind == "copy":
                assert task.environment_dir is not None
                sandbox.put(os.fspath(task.environment_dir / step.source), step.destination)
                continue
            exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in step.env.items())
            observation = sandbox.run(
                f"{exports}mkdir -p {shlex.quote(step.workdir)} && cd {shlex.quote(step.workdir)}"
                f" && {step.command}",
                timeout=SETUP_TIMEOUT_S,
            )
            if observation.exit_code != 0:
                tail = observation.output.strip().splitlines()[-5:]
                raise TaskError(
                    f"{task.id}: set-up step {number} ({step.command[:80]!r}) failed with "
                    f"exit code {observation.exit_code}: " + " | ".join(tail)
                )
        checkpoint = sandbox.checkpoint()
    if not task.network:
        # Set-up may fetch what it needs; the agent's calls, forked from here, may not.
        with Sandbox.fork(layers, checkpoint, network=False) as offline:
            checkpoint = offline.checkpoint(always=True)
    layers.set_ref(name, checkpoint)
    return checkpoint
