"""The name of a task's base layer: content-addressed by everything its set-up depends on,
so that an unchanged task on an unchanged machine finds the layer it built before, and any
change builds a new one.

The hash reads the task's fields, what the set-up saw of this machine, the stages' images
and every path that a copy takes from the build context, by the one rule of
`sprout.tasks.digest` (a link's target, not what it leads to; modes too, which COPY
keeps). Only what a copy takes counts, `.dockerignore` applied: a change to any other file
of the context leaves the base layer as it was. A URL counts by itself: change it to fetch
anew.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator

from sprout.images.machine_network import machine_inputs
from sprout.task import Task, TaskError
from sprout.tasks.digest import entry_bytes, read_entry
from sprout.tasks.dockerfile.context import inside, walk
from sprout.tasks.files import os_problem
from sprout.tasks.setup.inputs import SetupInputs


def base_layer_name(task: Task, inputs: SetupInputs) -> str:
    """`base-TASK-[at-IMAGEDIGEST-]HASH`: the task's id, the registry digest its image was
    pulled by (readable in `sprout shell`'s list) and the hash of its inputs."""
    name = f"base-{re.sub(r'[^A-Za-z0-9._-]', '_', task.id)[:80]}-"
    digest = inputs.final.root.digest
    if digest:
        name += f"at-{digest.partition(':')[2][:12]}-"
    return name + base_digest(task, inputs)


def base_digest(task: Task, inputs: SetupInputs) -> str:
    """A hash of everything the base layer depends on: image, steps, env, copied bytes, and
    what the set-up saw of this machine (its index settings, certificate bundle, resolver)."""
    digest = hashlib.sha256(machine_inputs(inputs.machine))
    digest.update(
        json.dumps(
            [
                inputs.final.root.identity,
                task.workdir,
                task.env,
                task.network,
                task.setup_network,
                task.user_namespaces,
                [task.user, task.agent_user, task.verifier_user],
                [s.model_dump(exclude={"origin"}) for s in task.setup],
                [s.model_dump(exclude={"steps": {"__all__": {"origin"}}}) for s in task.stages],
                [task.cpus, task.memory_bytes, task.disk_bytes],
                *([list(task.withheld)] if task.withheld else []),  # older digests stay
                *([task.git_history.model_dump()] if task.git_history else []),
            ],
            sort_keys=True,
        ).encode()
    )
    for chunk in context_inputs(task, inputs):
        digest.update(chunk)
    return digest.hexdigest()[:16]


def context_inputs(task: Task, inputs: SetupInputs) -> Iterator[bytes]:
    """What set-up reads besides the task's fields: the stages' images, then the entries
    each copy takes from the build context, in step order (the task's own steps, then each
    stage's). A path that cannot be read is a TaskError naming it."""
    try:
        yield from _context_inputs(task, inputs)
    except OSError as error:
        raise TaskError(f"{task.id}: {os_problem(error)}") from None


def _context_inputs(task: Task, inputs: SetupInputs) -> Iterator[bytes]:
    for stage in inputs.stages:
        yield stage.root.identity.encode()
    for stage in (inputs.final, *inputs.stages):
        for matched in stage.sources:
            if matched is None:
                continue
            context = matched.context
            for relative in matched.found:
                path = inside(context, relative)  # a source that is a link is followed
                if path is None:
                    continue
                yield entry_bytes(read_entry(relative, path))
                if path.is_dir():
                    for below in walk(context, relative, matched.ignore):
                        yield entry_bytes(read_entry(below, context / below))
