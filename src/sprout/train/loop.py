"""`sprout train`: rollouts with the training schedule, samples, one learner step; repeat.

Each step's rollouts are played by the weights the previous step saved
(`OUT/policy/step-K`), so every sample is on-policy for the step that trains
on it, and a step's policy can be opened, served or exported on its own. The
learner keeps its optimizer state across steps within one command.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sprout.agent import ActorConfig
from sprout.runfolder import RunFolder
from sprout.search import Progress, RunSettings, run_tasks
from sprout.search.methods import training_method
from sprout.task import Task
from sprout.train.learner import Learner, LearnerConfig, StepStats
from sprout.train.samples import build_samples


@dataclass(frozen=True)
class TrainSettings:
    """What `sprout train` was asked to do."""

    model: Path
    """The starting weights: a Hugging Face model folder."""
    steps: int
    roots: int = 2
    children: int = 3
    selector: str = "reviewer"
    credit: str = "grpo"
    train_starting_turn: bool = True
    max_length: int | None = None
    workers: int = 1
    actor: ActorConfig = field(default_factory=lambda: ActorConfig(max_turns=8))
    hf_options: dict[str, Any] = field(default_factory=dict)
    learner: LearnerConfig = field(default_factory=LearnerConfig)


def policy_path(out: Path, step: int) -> Path:
    """Where the weights after `step` learner steps are saved."""
    return out / "policy" / f"step-{step}"


def train(
    tasks: Sequence[Task], run: RunFolder, settings: TrainSettings, progress: Progress
) -> list[StepStats]:
    """`settings.steps` rounds of rollouts and one learner step each; stats per step, also
    appended to `OUT/train.jsonl` as they come."""
    learner = Learner(settings.model, settings.learner)
    for note in learner.notes:
        progress.event("-", "train", f"note: {note}")
    policy = settings.model
    actor = settings.actor
    if not actor.logprobs:
        actor = actor.model_copy(update={"logprobs": True})  # rollout log-probs for the ratio
    log = run.path / "train.jsonl"
    history: list[StepStats] = []
    for step in range(1, settings.steps + 1):
        method = training_method(
            roots=settings.roots,
            children=settings.children,
            selector=settings.selector,
            name=f"train@{step}",
        )
        rollout = RunSettings(
            model=f"hf/{policy}",
            methods=(method,),
            workers=settings.workers,
            actor=actor,
            hf_options=settings.hf_options,
        )
        progress.event("-", method.name, f"rollouts with {policy}")
        run_tasks(tasks, run, rollout, progress)
        batch = build_samples(
            run.tree,
            methods=[method.name],
            credit=settings.credit,  # type: ignore[arg-type]
            train_starting_turn=settings.train_starting_turn,
            max_length=settings.max_length,
            overlong="drop" if settings.max_length else "error",
            decode=learner.tokenizer.decode,
        )
        progress.event("-", method.name, batch.report.describe())
        stats = learner.step(batch.samples)
        policy = learner.save(policy_path(run.path, step))
        progress.event("-", method.name, f"{stats.line()}; saved {policy}")
        record = {"step": step, "policy": str(policy), **stats.as_dict()}
        record["groups"] = batch.report.groups
        record["zero_variance_groups"] = batch.report.zero_variance_groups
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        history.append(stats)
    return history
