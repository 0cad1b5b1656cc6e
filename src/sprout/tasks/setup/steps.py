"""Running set-up steps in a sandbox as `docker build` runs a Dockerfile's instructions.

A `run` step runs in its workdir with its env, by its shell (`/bin/sh -c` for
a Dockerfile's RUN, as Docker's default SHELL), as its user: the image's
`setpriv` (or `su`) switches to the ids that the image's own /etc/passwd and
/etc/group give the name, with HOME from there too.

A `workdir` step (WORKDIR after USER) makes the directories that are missing, owned by
that user, as BuildKit does. A `copy` step (COPY, ADD) is `sprout.tasks.setup.copy`'s:
`Build` hands it what it takes from the build context (read once, `inputs`) and the
checkpoint of the stage it copies from, built here first. USER and `--chown` names resolve
through the image's own files as the step runs (`sprout.tasks.setup.users`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import PurePosixPath

from sprout.sandbox import Sandbox
from sprout.task import SetupStep
from sprout.tasks.dockerfile.context import MatchedSource
from sprout.tasks.dockerfile.state import is_root
from sprout.tasks.imageref import RootFilesystem
from sprout.tasks.setup.build_settings import BuildSettings
from sprout.tasks.setup.copy import run_copy
from sprout.tasks.setup.inputs import StageInputs
from sprout.tasks.setup.users import resolve_user


class Build:
    """One base layer's build, run step by step: the earlier stages are each built in a
    sandbox of their own the first time a step copies from them."""

    def __init__(self, settings: BuildSettings, stages: Sequence[StageInputs]) -> None:
        self.settings = settings
        self.stages = stages
        """The earlier stages' inputs, as `task.stages`."""
        self.built: dict[int, str] = {}
        """Stage index -> the checkpoint with all its steps run."""
        self.claimed: set[str] = set()
        """Directories an earlier WORKDIR step made or found: a later one leaves them be."""

    @contextmanager
    def open_sandbox(
        self, root: RootFilesystem, workdir: str, env: dict[str, str]
    ) -> Iterator[Sandbox]:
        """A set-up sandbox over `root`, readied (`BuildSettings.prepare`) unless it is the
        host's own filesystem."""
        task = self.settings.task
        with Sandbox.create(
            self.settings.layers,
            image=root.path,
            workdir=workdir,
            env=env,
            network=task.setup_network,
            user_namespaces=task.user_namespaces,
        ) as sandbox:
            if root.path != "host":
                self.settings.prepare(sandbox)
            yield sandbox

    def run_steps(
        self, sandbox: Sandbox, steps: Sequence[SetupStep], inputs: StageInputs, prefix: str
    ) -> None:
        """Run a stage's `steps` in `sandbox` in order, each with what it takes from the
        build context (`inputs`), labelled `{prefix}set-up step N`."""
        for number, (step, sources) in enumerate(zip(steps, inputs.sources, strict=True), 1):
            self.run(sandbox, step, sources, f"{prefix}set-up step {number}")

    def stage(self, index: int) -> str:
        """The checkpoint of stage `index` with all its steps run."""
        if index in self.built:
            return self.built[index]
        stage, inputs = self.settings.task.stages[index], self.stages[index]
        env = {**inputs.root.env, **self.settings.env, **stage.env}
        with self.open_sandbox(inputs.root, stage.workdir, env) as sandbox:
            self.run_steps(sandbox, stage.steps, inputs, f"stage {stage.name or index} ")
            self.built[index] = sandbox.checkpoint(always=True)
        return self.built[index]

    def run(
        self, sandbox: Sandbox, step: SetupStep, sources: MatchedSource | None, label: str
    ) -> None:
        """Run one set-up step in `sandbox` (a copy with `sources`, what it takes from the
        build context); TaskError names the task, `label`, where the step comes from and
        the step."""
        if step.origin:
            label = f"{label} at {step.origin}"
        if step.kind == "copy":
            built = None if step.stage is None else self.stage(step.stage)
            run_copy(self.settings, sandbox, step, label, sources=sources, stage=built)
            return
        if step.kind == "workdir":
            self.make_workdir(sandbox, step, label)
            return
        env = dict(step.env)
        program = [*step.shell, step.command] if step.shell else None
        if step.user and not is_root(step.user):
            who = resolve_user(sandbox, step.user, f"{self.settings.task.id}: {label}")
            env.setdefault("HOME", who.home)
            tail = "{ " + who.switch(program or ["/bin/sh", "-c", step.command]) + "; }"
        elif program is not None:
            tail = "exec " + shlex.join(program)
        else:
            tail = step.command
        exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items())
        workdir = shlex.quote(step.workdir)
        script = f"{exports}mkdir -p {workdir} && cd {workdir} && {tail}"
        self.settings.check(label, step.command, sandbox.run(script, self.settings.timeout))

    def make_workdir(self, sandbox: Sandbox, step: SetupStep, label: str) -> None:
        """BuildKit's WORKDIR after a USER: the directories it makes (parents too) belong to
        that user and its primary group, so the user can write there; those already there
        keep their owner. The sandbox's own workdir, which `Sandbox.create` made before any
        step, counts as missing where the image lacks it: in Docker this WORKDIR makes it."""
        who = resolve_user(sandbox, step.user, f"{self.settings.task.id}: {label}")
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
        self.settings.check(
            label, f"WORKDIR {step.destination}", sandbox.run(script, self.settings.timeout)
        )
