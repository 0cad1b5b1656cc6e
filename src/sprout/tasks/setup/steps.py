"""Running set-up steps in a sandbox as `docker build` runs a Dockerfile's instructions.

A `run` step runs in its workdir with its env, by its shell (`/bin/sh -c` for
a Dockerfile's RUN, as Docker's default SHELL), as its user: the image's
`setpriv` (or `su`) switches to the ids that the image's own /etc/passwd and
/etc/group give the name, with HOME from there too.

A `workdir` step (WORKDIR after USER) makes the directories that are missing, owned by
that user, as BuildKit does. A `copy` step (COPY, ADD) is `sprout.tasks.setup.copy`'s;
USER and `--chown` names resolve through the image's own files (`sprout.tasks.setup.users`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from pathlib import PurePosixPath

from sprout.sandbox import Sandbox
from sprout.task import SetupStep, Task, TaskError
from sprout.tasks.digest import entry_bytes, read_entry
from sprout.tasks.dockerfile.context import (
    Ignore,
    clean_source,
    inside,
    matches,
    walk,
)
from sprout.tasks.dockerfile.state import is_root
from sprout.tasks.files import os_problem
from sprout.tasks.imageref import image_rootfs
from sprout.tasks.setup.build_state import BuildState
from sprout.tasks.setup.copy import run_copy
from sprout.tasks.setup.users import resolve_user


class Build(BuildState):
    """One base layer's build, run step by step: the earlier stages are each built in a
    sandbox of their own the first time a step copies from them."""

    def stage(self, index: int) -> str:
        """The checkpoint of stage `index` with all its steps run."""
        if index in self.built:
            return self.built[index]
        stage = self.task.stages[index]
        root = image_rootfs(stage.image, self.task)
        rootfs = root.path
        label = f"stage {stage.name or index}"
        with Sandbox.create(
            self.layers,
            image=rootfs,
            workdir=stage.workdir,
            env={**root.env, **self.env, **stage.env},
            network=self.task.setup_network,
            user_namespaces=self.task.user_namespaces,
        ) as sandbox:
            if rootfs != "host":
                self.prepare(sandbox)
            for number, step in enumerate(stage.steps, 1):
                self.run(sandbox, step, f"{label} set-up step {number}")
            self.built[index] = sandbox.checkpoint(always=True)
        return self.built[index]

    def run(self, sandbox: Sandbox, step: SetupStep, label: str) -> None:
        """Run one set-up step in `sandbox`; TaskError names the task, `label`, where the step
        comes from and the step."""
        if step.origin:
            label = f"{label} at {step.origin}"
        if step.kind == "copy":
            run_copy(self, sandbox, step, label, self.stage)
            return
        if step.kind == "workdir":
            self.make_workdir(sandbox, step, label)
            return
        env = dict(step.env)
        program = [*step.shell, step.command] if step.shell else None
        if step.user and not is_root(step.user):
            who = resolve_user(sandbox, step.user, f"{self.task.id}: {label}")
            env.setdefault("HOME", who.home)
            tail = "{ " + who.switch(program or ["/bin/sh", "-c", step.command]) + "; }"
        elif program is not None:
            tail = "exec " + shlex.join(program)
        else:
            tail = step.command
        exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items())
        workdir = shlex.quote(step.workdir)
        script = f"{exports}mkdir -p {workdir} && cd {workdir} && {tail}"
        self.check(label, step.command, sandbox.run(script, self.timeout))

    def make_workdir(self, sandbox: Sandbox, step: SetupStep, label: str) -> None:
        """BuildKit's WORKDIR after a USER: the directories it makes (parents too) belong to
        that user and its primary group, so the user can write there; those already there
        keep their owner. The sandbox's own workdir, which `Sandbox.create` made before any
        step, counts as missing where the image lacks it: in Docker this WORKDIR makes it."""
        who = resolve_user(sandbox, step.user, f"{self.task.id}: {label}")
        parts = PurePosixPath(step.destination).parts[1:]
        paths = ["/" + "/".join(parts[: n + 1]) for n in range(len(parts))]
        image = sandbox.store.image_root(sandbox.config)
        premade = [
            path
            for path in paths
            if image is not None
            and path not in self.claimed
            and PurePosixPath(sandbox.config.workdir).is_relative_to(path)
            and not os.path.lexists(os.path.join(image, path.lstrip("/")))
        ]
        self.claimed.update(paths)
        owner = f"{who.uid}:{who.gid}"
        script = (
            f"for d in {' '.join(map(shlex.quote, paths))}; do "
            f'[ -e "$d" ] || {{ mkdir "$d" && chown {owner} "$d"; }} || exit 1; done'
        )
        if premade:
            script += f" && chown {owner} {' '.join(map(shlex.quote, premade))}"
        self.check(label, f"WORKDIR {step.destination}", sandbox.run(script, self.timeout))


def context_inputs(task: Task) -> Iterator[bytes]:
    """What set-up reads besides the task's fields, for the base layer's hash: the stages'
    images and every path that a copy takes from the build context, by the one rule of
    `sprout.tasks.digest` (a link's target, not what it leads to; modes too, which COPY
    keeps). Only what a copy takes counts, `.dockerignore` applied: a change to any other
    file of the context leaves the base layer as it was. A URL counts by itself: change it
    to fetch anew. A path that cannot be read is a TaskError naming it."""
    try:
        yield from _context_inputs(task)
    except OSError as error:
        raise TaskError(f"{task.id}: {os_problem(error)}") from None


def _context_inputs(task: Task) -> Iterator[bytes]:
    for stage in task.stages:
        yield image_rootfs(stage.image, task).identity.encode()
    context = task.environment_dir
    if context is None:
        return
    for step in [*task.setup, *(s for stage in task.stages for s in stage.steps)]:
        if step.kind != "copy" or step.content is not None or step.stage is not None:
            continue
        if step.source.startswith(("http://", "https://")):
            continue
        ignore = Ignore(step.ignore)
        for relative in matches(context, clean_source(step.source), ignore):
            path = inside(context, relative)  # a source that is a link is followed
            if path is None:
                continue
            yield entry_bytes(read_entry(relative, path))
            if path.is_dir():
                for below in walk(context, relative, ignore):
                    yield entry_bytes(read_entry(below, context / below))
