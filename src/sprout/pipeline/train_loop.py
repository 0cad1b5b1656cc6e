"""`sprout train`: rollouts with the training schedule, samples, one learner step; repeat.

Each step's rollouts are played by the weights the previous step saved
(`OUT/policy/step-K`), so every sample is on-policy for the step that trains
on it, and a step's policy can be opened, served or exported on its own: in
process (`hf/`), or by a rollout server put on those weights before the step
(`sprout.pipeline.rollout_server`). The learner keeps its optimizer state
across steps within one command.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sprout.agent import ActorConfig
from sprout.config import changed_settings
from sprout.errors import SproutError
from sprout.models.config import ModelConfig
from sprout.models.resolve import ModelSpec
from sprout.pipeline.rollout_server import RolloutServer
from sprout.pipeline.task_draw import step_tasks
from sprout.runfolder import RunFolder
from sprout.search import Progress, RunSettings, run_tasks
from sprout.search.halt import Halt
from sprout.search.methods import Method, training_method
from sprout.task import Task
from sprout.tasksandbox import TaskSandboxes
from sprout.train.learner import Learner, LearnerConfig, StepStats
from sprout.train.samples import build_samples
from sprout.tree import RunMeta


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
    workers: int | None = 1
    """Sandboxes at once during the rollouts; None: as many as there is room for."""
    actor: ActorConfig = field(default_factory=lambda: ActorConfig(max_turns=8))
    hf_options: dict[str, Any] = field(default_factory=dict)
    """The rollout model's options (`max_new_tokens` also caps a rollout server's replies)."""
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    rollout_server: str | None = None
    """The kind of server that plays the rollouts (`rollout_server.SERVERS`); None: `hf/`."""
    tasks_per_step: int | None = None
    """Tasks each step plays, drawn by `task_draw.step_tasks`; None: every task every step."""
    data_seed: int = 0
    """The seed of that draw."""


LOG = "train.jsonl"


def _settings_json(settings: TrainSettings) -> dict[str, Any]:
    """What a resume must match; the number of steps may grow."""
    return {
        "model": str(settings.model),
        "roots": settings.roots,
        "children": settings.children,
        "selector": settings.selector,
        "credit": settings.credit,
        "train_starting_turn": settings.train_starting_turn,
        "max_length": settings.max_length,
        "actor": settings.actor.model_dump(mode="json"),
        "hf_options": settings.hf_options,
        "learner": settings.learner.model_dump(mode="json"),
        **({"rollout_server": settings.rollout_server} if settings.rollout_server else {}),
        **(_draw_json(settings) if settings.tasks_per_step else {}),
    }


def _draw_json(settings: TrainSettings) -> dict[str, Any]:
    """The draw's settings, stored only when there is a draw, so that a run started
    before `--tasks-per-step` existed resumes as it was."""
    return {"tasks_per_step": settings.tasks_per_step, "data_seed": settings.data_seed}


TRAIN_TABLES: dict[str, type[BaseModel]] = {"actor": ActorConfig, "learner": LearnerConfig}
"""The tables of `_settings_json`, read back through their models on `--resume`."""


def policy_path(out: Path, step: int) -> Path:
    """Where the weights after `step` learner steps are saved."""
    return out / "policy" / f"step-{step}"


class TrainResumeError(SproutError, ValueError):
    """A `--resume` whose settings differ from those the run was started with."""


def finished_steps(run: RunFolder) -> list[dict[str, Any]]:
    """The log lines of the steps that ended (weights saved), in order."""
    log = run.path / LOG
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def train(
    tasks: Sequence[Task],
    run: RunFolder,
    settings: TrainSettings,
    progress: Progress,
    halt: Halt | None = None,
    server: RolloutServer | None = None,
    sandboxes: TaskSandboxes | None = None,
    prepare: Callable[[Sequence[Task]], Sequence[Task]] | None = None,
) -> list[StepStats]:
    """Rollouts and one learner step, up to `settings.steps` steps; stats of the steps run
    now, also appended to `OUT/train.jsonl` as they come.

    A run folder that already holds steps (a resumed run) goes on after its last saved
    step, from that step's weights and optimizer state; the rollouts of an unfinished
    step continue where they stopped. With `halt` set (Ctrl-C) the rollouts stop as
    `sprout run`'s do and no learner step is taken on them. With `server` (of kind
    `settings.rollout_server`; the caller closes it) each step's rollouts are sampled by it,
    put on the step's weights first. With `sandboxes` (a Ray cluster's, say; the caller
    closes them) every step's sandbox work runs there, while the learner and the rollout
    model stay in this process; each step's `run_tasks` releases a task's sandboxes when its
    rollouts end, so a step holds nothing of the one before. A step plays the tasks drawn
    for it (`_drawn`), readied by `prepare` (which may leave out one it cannot ready).
    """
    halt = halt or Halt()
    _claim_settings(run, settings)
    done = finished_steps(run)
    policy = Path(done[-1]["policy"]) if done else settings.model
    learner = Learner(policy, settings.learner)
    if server is None:  # a server's ids are checked against the learner's at every step
        learner.check_tokenizer(run.tree.meta().tokenizer_json(), where=str(run.path))
    for note in learner.notes:
        progress.event("-", "train", f"note: {note}")
    history: list[StepStats] = []
    for step in range(len(done) + 1, settings.steps + 1):
        method = training_method(
            roots=settings.roots,
            children=settings.children,
            selector=settings.selector,
            name=f"train@{step}",
        )
        rollouts = _rollout_settings(settings, policy, method)
        served: dict[str, Any] = {}
        if server is not None:
            rollouts, served = _serve(server, policy, step - 1, learner, rollouts)
        where = f" on {served['url']} ({served['weights']})" if served else ""
        progress.event("-", method.name, f"rollouts with {policy}{where}")
        drawn = _drawn(tasks, settings, step)
        played = list(prepare(drawn)) if prepare else drawn
        run_tasks(played, run, rollouts, progress, halt, sandboxes)
        if halt.is_set():
            progress.event("-", method.name, f"no learner step: {halt.reason}")
            break
        logged: dict[str, Any] = {"rollout_server": served} if served else {}
        if settings.tasks_per_step:  # what the step played, for a reader of its log line
            logged["tasks"] = [task.id for task in played]
        stats, policy = _learner_step(run, settings, learner, method.name, step, progress, logged)
        history.append(stats)
    return history


def _drawn(tasks: Sequence[Task], settings: TrainSettings, step: int) -> list[Task]:
    """The tasks step `step` plays: every task, or with `settings.tasks_per_step` those
    `task_draw` draws for it (then listed in the step's log line)."""
    if not settings.tasks_per_step:
        return list(tasks)
    by_id = {task.id: task for task in tasks}
    ids = step_tasks(list(by_id), settings.tasks_per_step, settings.data_seed, step)
    return [by_id[task_id] for task_id in ids]


def _claim_settings(run: RunFolder, settings: TrainSettings) -> None:
    """Record the settings of a new run; refuse a resume that changes any of them, since
    its steps would no longer train one policy one way."""
    wanted = json.loads(json.dumps(_settings_json(settings)))
    stored = run.tree.meta().train
    if stored is None:
        run.tree.update_meta(RunMeta(train=wanted))
    elif changed := changed_settings(stored, wanted, TRAIN_TABLES):
        raise TrainResumeError(
            f"{run.path}: --resume with different settings ({', '.join(changed)}) than the "
            "run was started with"
        )


def _rollout_settings(settings: TrainSettings, policy: Path, method: Method) -> RunSettings:
    """One step's rollouts: the training schedule played by the latest saved `policy`,
    which reports log-probs (the learner's ratio needs the rollout's own)."""
    actor = settings.actor
    if not actor.logprobs:
        actor = actor.model_copy(update={"logprobs": True})
    return RunSettings(
        model=ModelSpec.parse(f"hf/{policy}"),
        methods=(method,),
        workers=settings.workers,
        actor=actor,
        hf_options=settings.hf_options,
    )


def _serve(
    server: RolloutServer, policy: Path, step: int, learner: Learner, rollouts: RunSettings
) -> tuple[RunSettings, dict[str, Any]]:
    """`rollouts` played by `server` put on `policy` (saved after `step` steps) and checked
    against the learner's vocabulary; (those settings, what the step's log line records:
    the URL, the weights served, the seconds it took and the server's own fingerprint)."""
    served = server.serve(policy, step)
    fingerprint = server.check(served.url, learner.tokenizer, policy)
    options = ModelConfig(
        max_tokens=rollouts.hf_options.get("max_new_tokens"), tokenizer=str(policy)
    )
    played = replace(
        rollouts,
        model=ModelSpec.parse(f"{server.kind}/{policy.name}"),
        base_url=served.url,
        model_options=options,
    )
    record = {"url": served.url, "weights": served.weights, "serve_s": served.seconds}
    return played, {**fingerprint, **record}


def _learner_step(
    run: RunFolder,
    settings: TrainSettings,
    learner: Learner,
    method: str,
    step: int,
    progress: Progress,
    logged: dict[str, Any],
) -> tuple[StepStats, Path]:
    """Samples of `method`'s rollouts, one learner step on them, the weights saved and the
    step logged to `OUT/train.jsonl` (which a resume reads), with the rollout server that
    played them and the tasks it played (`logged`: `rollout_server` when a server played
    them, `tasks` with a draw); (its stats, the new policy)."""
    batch = build_samples(
        run.tree,
        methods=[method],
        credit=settings.credit,  # type: ignore[arg-type]
        train_starting_turn=settings.train_starting_turn,
        max_length=settings.max_length,
        overlong="drop" if settings.max_length else "error",
        decode=lambda ids: str(learner.tokenizer.decode(list(ids))),
    )
    progress.event("-", method, batch.report.describe())
    stats = learner.step(batch.samples)
    policy = learner.save(policy_path(run.path, step))
    progress.event("-", method, f"{stats.line()}; saved {policy}")
    record = {"step": step, "policy": str(policy), **stats.as_dict()}
    record["groups"] = batch.report.groups
    record["zero_variance_groups"] = batch.report.zero_variance_groups
    record.update(logged)
    with (run.path / LOG).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    return stats, policy
