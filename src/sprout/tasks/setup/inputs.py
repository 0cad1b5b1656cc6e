"""What checkpoint 0's set-up reads before it runs anything, read once: the root filesystem
of each image it stands on, what each copy step takes from the build context, this machine's
package-index settings and who the agent and verifier run as.

`checkpoint.base_checkpoint_of` gathers them; the base layer's name (`base_name`) hashes
them and the build (`steps.Build`) runs on them, so nothing below reads them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sprout.images.machine_network import IndexSettings, index_settings
from sprout.task import SetupStep, Task, TaskError
from sprout.tasks.dockerfile.context import MatchedSource, match_source
from sprout.tasks.files import os_problem
from sprout.tasks.imageref import RootFilesystem, image_rootfs
from sprout.tasks.setup.phase_users import TaskUsers, task_users


@dataclass(frozen=True)
class StageInputs:
    """One stage (the task's own last one, or an earlier one a copy takes from): its image's
    root filesystem and, step by step, what each copy takes from the build context (None
    for every other step, and for a copy of a URL, a heredoc or a stage's files)."""

    root: RootFilesystem
    sources: tuple[MatchedSource | None, ...]


@dataclass(frozen=True)
class SetupInputs:
    """Everything a task's set-up reads besides its own fields."""

    final: StageInputs
    """The task's image and its `setup` steps."""
    stages: tuple[StageInputs, ...]
    """The earlier stages, as `task.stages` (`SetupStep.stage` indexes them)."""
    machine: IndexSettings
    users: TaskUsers


def gather_inputs(task: Task) -> SetupInputs:
    """The inputs of `task`'s set-up: its image first, this machine's index settings, then
    its stages' images (each pulled or built as the task's `image_mode` allows), then the
    build context, whose unreadable path is a TaskError naming it."""
    root = image_rootfs(task.image, task)
    machine = index_settings()
    try:
        stage_roots = [image_rootfs(stage.image, task) for stage in task.stages]
        final = StageInputs(root, _sources(task, task.setup))
        stages = tuple(
            StageInputs(stage_root, _sources(task, stage.steps))
            for stage_root, stage in zip(stage_roots, task.stages, strict=True)
        )
    except OSError as error:
        raise TaskError(f"{task.id}: {os_problem(error)}") from None
    return SetupInputs(final, stages, machine, task_users(task))


def _sources(task: Task, steps: Sequence[SetupStep]) -> tuple[MatchedSource | None, ...]:
    context = task.environment_dir
    return tuple(
        match_source(context, step.source, step.ignore)
        if context is not None and _takes_from_context(step)
        else None
        for step in steps
    )


def _takes_from_context(step: SetupStep) -> bool:
    """True when `step` is a copy from the build context: not a heredoc, a stage or a URL."""
    return (
        step.kind == "copy"
        and step.content is None
        and step.stage is None
        and not step.source.startswith(("http://", "https://"))
    )
