"""The leader's work: one task's training group played into a sprout run folder of its own.

The group is `sprout train`'s rollouts for one task (`train-rollouts`: `roots` roots, then
`children` children of each, guided by the analyst and reviewer when every root failed),
played by `run_tasks` as `sprout run` plays it, with the model the loop built on verl's
servers. The folder is an ordinary run: `sprout view` and `sprout shell` open it. What comes
back is one `Played` per slot, attempts in the order they were made (roots, then each root's
children), which is the order the samples claimed their slots in.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sprout.agent import ActorConfig
from sprout.integrations.verl.outputs import Played
from sprout.models import Model
from sprout.models.resolve import ModelSpec
from sprout.roles import RolesConfig
from sprout.runfolder import RunFolder
from sprout.search import Progress, RunSettings, run_tasks
from sprout.search.methods import Method, Selector, training_method
from sprout.task import Task
from sprout.tasksandbox import TaskSandboxes
from sprout.train.groups import finished_groups
from sprout.train.samples import group_samples
from sprout.tree import Placement, RayPlacements, RolloutTree, RunMeta


class LoopSettings(BaseModel):
    """The `sprout` loop's keys in verl's agent-loop config (examples/verl/agent_loop.yaml)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runs: str
    """The folder each group's run folder is made in (`TASK-UID`): an absolute path, since
    verl's Ray workers run in folders of Ray's."""
    roots: int = Field(2, ge=1)
    children: int = Field(3, ge=1)
    selector: Selector = "reviewer"
    """Who picks an unguided child's boundary (`sprout train --selector`)."""
    max_turns: int = Field(8, ge=1)
    roles: RolesConfig = Field(default_factory=RolesConfig)
    """The analyst's and reviewer's settings: `sprout run`'s `[roles]` table
    (`max_retries`, templates)."""
    reply_tokens: int = Field(1024, ge=1)
    """The most tokens one model reply may have (verl's `response_length` bounds the whole
    rollout, all its turns together)."""
    workers: int | None = Field(None, ge=1)
    """Sandboxes one group keeps alive at once; None: its roots' number."""
    ray: bool = False
    """Place the group's sandboxes on the nodes of the Ray cluster verl runs on, as `sprout
    run --ray` places a task's (each node's store under TMP/sprout-ray/RUN/{node}); False:
    on the node of the worker that leads the group."""
    ray_cpus: float = Field(1.0, gt=0)
    """With `ray`: the cores Ray reserves for the group's task, and its commands at once."""
    ray_store: str | None = Field(None, pattern=r"\{node\}")
    """With `ray`: each node's store, `{node}` the node's id (`sprout run --ray-store`);
    None: TMP/sprout-ray/RUN/{node}."""

    @field_validator("runs")
    @classmethod
    def _absolute(cls, runs: str) -> str:
        if not os.path.isabs(runs):
            raise ValueError(
                f"runs: {runs!r} is not an absolute path (verl's workers run elsewhere)"
            )
        return runs

    def method(self) -> Method:
        return training_method(roots=self.roots, children=self.children, selector=self.selector)


def play_group(
    task: Task, settings: LoopSettings, model: Model, folder: Path, progress: Progress
) -> list[Played]:
    """Play `task`'s group with `model` into the new run folder `folder`; one `Played` per
    slot of the group."""
    method = settings.method()
    run = RunFolder.create_new(folder)
    try:
        played = RunSettings(
            model=ModelSpec.parse(model.name),
            methods=(method,),
            workers=settings.workers or method.roots,
            actor=ActorConfig(max_turns=settings.max_turns, logprobs=True),
            roles=settings.roles,
        )
        with _sandboxes(settings, run) as sandboxes:
            run_tasks([task], run, played, progress, sandboxes=sandboxes, model=model)
        return slots(run.tree, method.group_size)
    finally:
        run.close()


@contextmanager
def _sandboxes(settings: LoopSettings, run: RunFolder) -> Iterator[TaskSandboxes | None]:
    """Where the group's sandboxes run: None (the run folder's store, on this node), or with
    `settings.ray` the cluster's nodes, the placements kept in the run's meta as `sprout run
    --ray` keeps them, and the task's actor ended after."""
    if not settings.ray:
        yield None
        return
    from sprout.cluster import RaySandboxes, default_store

    def record(placements: list[dict[str, Any]]) -> None:
        placed = [Placement.model_validate(placement) for placement in placements]
        ray = RayPlacements(address="verl", placements=placed)
        run.tree.update_meta(RunMeta(ray=ray))

    store = settings.ray_store or default_store(str(run.path))
    with closing(RaySandboxes(store, settings.ray_cpus, record)) as sandboxes:
        yield sandboxes


def slots(tree: RolloutTree, size: int) -> list[Played]:
    """The `size` slots of the run's one group: each attempt with its sample, or, for a group
    that did not finish, why for every slot."""
    groups, unfinished = finished_groups(tree)
    if not groups:
        failed = [s["error"] for s in tree.schedules() if s.get("error")]
        why = "; ".join(unfinished or failed) or "no attempt was verified"
        return [Played(None, f"the group did not finish: {why}", None, None, None)] * size
    played = [
        Played(sample, None, attempt.reward, attempt.id, attempt.parent_id)
        for attempt, sample in group_samples(tree, groups[0])
    ]
    if len(played) < size:
        short = f"the group holds {len(played)} verified attempts, verl asked for {size}"
        played += [Played(None, short, None, None, None)] * (size - len(played))
    return played[:size]
