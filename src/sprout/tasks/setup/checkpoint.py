"""A task's base layer: its image plus its set-up steps, built once and cached by content."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

from sprout.images import ImageCache
from sprout.images.base_layers import building, lend, shared_store
from sprout.images.machine_network import put_machine_network
from sprout.sandbox import LayerStore, Limits, Sandbox, note_image
from sprout.task import Task, TaskError
from sprout.tasks.digest import folder_digest
from sprout.tasks.files import os_problem
from sprout.tasks.setup.base_name import base_layer_name
from sprout.tasks.setup.build_settings import BuildSettings
from sprout.tasks.setup.git_history import cut_history, keep_history
from sprout.tasks.setup.inputs import SetupInputs, gather_inputs
from sprout.tasks.setup.phase_users import with_task_users
from sprout.tasks.setup.steps import Build
from sprout.tasks.setup.withheld import withhold

SETUP_TIMEOUT_S = 1800.0
SETUP_ERROR_LINES = 20
"""How much of a failed set-up step's output its error carries."""
SOLUTION_DIGEST_LENGTH = 12
"""Hex digits of the solution folder's digest in its checkpoint's name."""


def agent_limits(task: Task) -> Limits:
    """The sandbox limits of the task's agent: its `[environment]` over the defaults."""
    defaults = Limits()
    return dataclasses.replace(
        defaults,
        cpus=defaults.cpus if task.cpus is None else task.cpus,
        memory_bytes=defaults.memory_bytes if task.memory_bytes is None else task.memory_bytes,
        disk_bytes=defaults.disk_bytes if task.disk_bytes is None else task.disk_bytes,
    )


def base_checkpoint_of(task: Task, layers: LayerStore) -> str:
    """Checkpoint 0 of `task`: built on first use, then reused by every run on `layers`;
    over an image of the machine's cache, built once per machine and linked into
    `layers` (`sprout.images.base_layers`).

    Set-up runs under the task's `setup_network` (public unless task.toml narrows it) and
    the default limits, as `docker build` runs without the container's; the checkpoint
    carries the task's `network` setting,
    its `[environment]` limits and its variables over this machine's package-index
    settings (`IndexSettings.agent_env`), and the agent's user (`[agent] user`, else the
    Dockerfile's final USER, as `docker exec` runs as it), which every fork of it (the
    agent's sandboxes, the oracle's) inherits; the verifier's fork runs as `[verifier]
    user` where task.toml sets one (`sprout.verify.runner`).
    """
    layers.host.hide(
        p for p in (task.path, task.environment_dir, task.tests_dir) if p is not None
    )  # its tests and solution above all, from every sandbox of the store
    inputs = gather_inputs(task)  # read once; below, only passed on
    root = inputs.final.root
    name = base_layer_name(task, inputs)
    in_cache = root.path.startswith(str(ImageCache().root))
    if in_cache:  # `sprout gc --images` keeps the image while `layers` is on the machine
        note_image(layers.path, root.identity)
    cached = layers.ref(name)
    if cached is not None:
        return cached
    shared = shared_store(layers) if in_cache else None
    if shared is None:
        return _build_base(task, layers, inputs, name)
    with building(shared, name):
        lent = lend(shared, name, layers)
        if lent is None:
            _build_base(task, shared, inputs, name)
            lent = lend(shared, name, layers)
    assert lent is not None, "the base layer was just built"
    layers.set_ref(name, lent)
    return lent


def _build_base(task: Task, layers: LayerStore, inputs: SetupInputs, name: str) -> str:
    """Run the task's set-up on its image in `layers`, and name the result `name` there. The
    image's own ENV comes first, as `docker build` and `docker run` start from it."""
    root, machine = inputs.final.root, inputs.machine
    build_env = {**root.env, **machine.env()}
    settings = BuildSettings(
        task,
        layers,
        env=build_env,
        prepare=lambda sandbox: put_machine_network(sandbox, machine),
        timeout=SETUP_TIMEOUT_S,
        error_lines=SETUP_ERROR_LINES,
    )
    build = Build(settings, inputs.stages)  # a stage is built when a step first copies from it
    # each step brings the ENV of its place in the Dockerfile
    with build.open_sandbox(root, task.workdir, build_env) as sandbox:
        build.run_steps(sandbox, task.setup, inputs.final, "")
        history = cut_history(task, sandbox, SETUP_TIMEOUT_S)  # read out, gone from the layer
        withhold(task, sandbox, SETUP_TIMEOUT_S)
        checkpoint = sandbox.checkpoint()
    checkpoint = with_task_users(task, inputs.users, layers, checkpoint)
    limits = agent_limits(task)
    env = {**root.env, **machine.agent_env(), **task.env}  # the task's own variables win
    if task.network != task.setup_network or limits != Limits() or env != build_env:
        # Set-up may fetch what it needs; the agent's calls, forked from here, may not. They
        # get the final ENV (which no set-up step before it had) over the machine's index.
        with Sandbox.fork(
            layers, checkpoint, env=env, network=task.network, limits=limits
        ) as agent:
            checkpoint = agent.checkpoint(always=True)
    keep_history(layers, checkpoint, history)  # beside checkpoint 0, for its verifier alone
    layers.set_ref(name, checkpoint)
    return checkpoint


def solution_checkpoint(task: Task, layers: LayerStore, base_checkpoint: str) -> str:
    """Checkpoint 0 for the oracle models: `base_checkpoint` with the task's `solution/` folder at
    /solution and its `[solution] env` set, as Harbor's oracle agent has them. Only the
    oracles start there; every other model, and every role, works from `base_checkpoint`. Its name
    carries the folder's content digest (`sprout.tasks.digest`), modes and links too, since
    the copy at /solution keeps them."""
    if task.solution_dir is None and not task.solution_env:
        return base_checkpoint
    try:
        name = f"{base_checkpoint}-solution"
        if task.solution_dir is not None:
            name += f"-{folder_digest(task.solution_dir, SOLUTION_DIGEST_LENGTH)}"
        if task.solution_env:
            variables = json.dumps(task.solution_env, sort_keys=True).encode()
            name += f"-env-{hashlib.sha256(variables).hexdigest()[:12]}"
        cached = layers.ref(name)
        if cached is not None:
            return cached
        env = {**layers.layer(base_checkpoint).config.env, **task.solution_env}
        with Sandbox.fork(layers, base_checkpoint, env=env) as oracle:
            if task.solution_dir is not None:
                oracle.put(os.fspath(task.solution_dir), "/solution")
            checkpoint = oracle.checkpoint(always=True)
    except OSError as error:  # the folder changed since it loaded, or holds a pipe
        why = os_problem(error)
        raise TaskError(f"{task.id}: {task.solution_dir}: not put at /solution: {why}") from None
    layers.set_ref(name, checkpoint)
    return checkpoint
