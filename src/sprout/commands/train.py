"""`sprout train` and `sprout train step`: from the tree to the learner."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sprout.commands import train_step
from sprout.commands.common import (
    UsageError,
    add_agent_config_argument,
    add_isolation_argument,
    add_task_source_arguments,
    check_isolation,
    load_task_arguments,
    load_tasks_unchosen,
    refuse_model_servers,
    usable_tasks,
    with_agent_config,
)
from sprout.commands.interrupt import INTERRUPTED, halting_on_ctrl_c
from sprout.commands.ray_options import add_ray_arguments, check_ray, on_cluster, ray_sandboxes
from sprout.commands.workers import add_workers_argument, workers
from sprout.errors import BAD_INPUT
from sprout.runfolder import RunFolder
from sprout.train.batching import LearnerError

if TYPE_CHECKING:
    from sprout.pipeline.rollout_server import RolloutServer
    from sprout.pipeline.train_loop import TrainSettings
    from sprout.sandbox import IsolationReport
    from sprout.search.halt import Halt
    from sprout.task import Task
    from sprout.tasks import LoadedTasks
    from sprout.tasks.setup.image_choice import ChosenImages
    from sprout.train.learner import StepStats


def add_parsers(commands: Any) -> None:
    train = commands.add_parser(
        "train",
        help="train a local model: rollouts, samples and a learner step, --steps times "
        "(or `step`: one learner step on exported samples)",
        description="Train a Hugging Face causal LM on SPROUT's groups (docs/training.md): "
        "each step plays the train-rollouts schedule on --tasks with the current weights, "
        "builds token-exact samples with tree credit, takes one learner step and saves the "
        "weights to DIR/policy/step-K.",
    )
    # Subcommands are optional so that options of `sprout train` itself can sit beside them.
    train_commands = train.add_subparsers(dest="train_command", metavar="COMMAND")
    train.set_defaults(func=cmd_train)
    _train_arguments(train)
    step = train_commands.add_parser(
        "step",
        help="one clipped-surrogate policy-gradient step on samples from `sprout export`",
        description="Load --model, take one clipped-surrogate step (no KL term) on --samples, "
        "save the updated weights and tokenizer to --out atomically, and print the step's "
        "statistics as a JSON line and a readable line.",
    )
    train_step.add_arguments(step)
    step.set_defaults(func=cmd_train_step, name="train step")


def cmd_train(args: argparse.Namespace) -> int:
    if args.model is None or args.tasks is None or args.out is None:
        raise UsageError(
            "give --model hf/PATH --tasks TASKS --steps N --out DIR, or a subcommand: step"
        )
    return _train(args)


def _train(args: argparse.Namespace) -> int:
    import transformers

    from sprout.search.halt import Halt

    settings = _train_settings(args)
    refuse_model_servers([args.base_url])
    check_ray(args)
    loaded, prepare = _load_tasks(args, settings)
    server = _rollout_server(args)
    transformers.logging.disable_progress_bar()
    halt = Halt()
    try:
        report = check_isolation(args.out, args.isolation, "train")
        with on_cluster(args):  # joined first: a cluster that cannot be reached costs no run folder
            history, interrupted = _steps(
                args, loaded.tasks, settings, report, halt, server, prepare
            )
    finally:
        if server is not None:
            server.close()
    print(f"\n{len(history)} steps run now; log: {Path(args.out) / 'train.jsonl'}")
    if interrupted:
        print(
            f"interrupted: `sprout train ... --out {args.out} --resume` continues", file=sys.stderr
        )
        return INTERRUPTED
    if halt.reason is not None:
        print(f"sprout train: stopped early: {halt.reason}", file=sys.stderr)
        return 1
    return BAD_INPUT if loaded.errors or (prepare and prepare.errors) else 0


def _load_tasks(
    args: argparse.Namespace, settings: TrainSettings
) -> tuple[LoadedTasks, _ImagesWhenDrawn | None]:
    """The tasks to train on: on their images, or, with a draw, as read, with what chooses
    each one's image the first time a step draws it; UsageError for a draw larger than
    the tasks that loaded."""
    from sprout.pipeline.task_draw import TaskDrawError, check_tasks_per_step

    if settings.tasks_per_step is None:
        return usable_tasks(load_task_arguments(args.tasks, args), "train"), None
    loaded, choose = load_tasks_unchosen(args.tasks, args)
    usable_tasks(loaded, "train")
    try:
        check_tasks_per_step(settings.tasks_per_step, len(loaded.tasks))
    except TaskDrawError as error:
        raise UsageError(str(error)) from None
    return loaded, _ImagesWhenDrawn(choose)


class _ImagesWhenDrawn:
    """Each task's image chosen (pulled, when it must be) the first time a step draws the
    task, not for every task up front: a run that plays 32 of 2,115 tasks a step pulls
    only what it plays. A task whose image cannot be had is named once and left out of
    every step that draws it (the command then exits 2, as for a task that did not load)."""

    def __init__(self, choose: Callable[[Sequence[Task]], ChosenImages]) -> None:
        self._choose = choose
        self._ready: dict[str, Task] = {}
        self._failed: set[str] = set()
        self.errors: list[str] = []

    def __call__(self, drawn: Sequence[Task]) -> list[Task]:
        known = {*self._ready, *self._failed}
        new = [task for task in drawn if task.id not in known]
        if new:
            chosen = self._choose(new)
            self._ready.update((task.id, task) for task in chosen.tasks)
            self._failed.update(task.id for task in new if task.id not in self._ready)
            for error in chosen.errors:
                print(f"sprout train: skipped: {error}", file=sys.stderr)
            self.errors.extend(chosen.errors)
        return [self._ready[task.id] for task in drawn if task.id in self._ready]


def _steps(
    args: argparse.Namespace,
    tasks: Sequence[Task],
    settings: TrainSettings,
    report: IsolationReport,
    halt: Halt,
    server: RolloutServer | None,
    prepare: _ImagesWhenDrawn | None,
) -> tuple[list[StepStats], bool]:
    """The run folder and its steps, with the sandboxes where --ray puts them; the folder
    and the sandboxes are closed whatever stops the steps. (The steps run now, whether
    Ctrl-C stopped them.)"""
    from sprout.pipeline.rollout_server import RolloutServerError
    from sprout.pipeline.train_loop import TrainResumeError, train
    from sprout.search import Progress

    run = RunFolder.resume(args.out) if args.resume else RunFolder.create_new(args.out)
    try:
        progress = Progress(quiet=args.quiet, tag="" if report.holds else "[NO ISOLATION]")
        with ray_sandboxes(args, run) as sandboxes, halting_on_ctrl_c(halt, "train") as ctrl_c:
            history = train(tasks, run, settings, progress, halt, server, sandboxes, prepare)
    except (TrainResumeError, RolloutServerError) as error:
        raise UsageError(str(error)) from None
    finally:
        run.close()
    return history, ctrl_c.pressed


def _train_settings(args: argparse.Namespace) -> TrainSettings:
    """`sprout train`'s settings from its arguments; UsageError naming a bad one."""
    from sprout.agent import ActorConfig
    from sprout.pipeline.train_loop import TrainSettings

    if not args.model.startswith("hf/"):
        raise UsageError(f"--model {args.model}: training needs a local model, hf/PATH")
    if args.steps < 1:
        raise UsageError(f"--steps: expected at least 1, got {args.steps}")
    _check_draw_arguments(args)
    try:
        actor = ActorConfig.from_file(args.config) if args.config else ActorConfig(max_turns=8)
        learner = train_step.learner_config(args)
    except ValueError as error:
        raise UsageError(f"--config {error}") from None
    actor = with_agent_config(actor, args)
    if args.max_turns is not None:
        actor = actor.model_copy(update={"max_turns": args.max_turns})
    return TrainSettings(
        model=Path(args.model.removeprefix("hf/")),
        steps=args.steps,
        roots=args.roots,
        children=args.children,
        selector=args.selector,
        credit=args.credit,
        train_starting_turn=not args.no_train_starting_turn,
        max_length=args.max_length,
        workers=workers(args),
        actor=actor,
        hf_options={"max_new_tokens": args.max_new_tokens, "device": learner.device},
        learner=learner,
        rollout_server=args.rollout_server,
        tasks_per_step=args.tasks_per_step,
        data_seed=args.data_seed or 0,
    )


def _check_draw_arguments(args: argparse.Namespace) -> None:
    """--tasks-per-step at least 1 (its upper bound, the number of tasks, is checked once
    they are loaded); --data-seed only with it, which alone reads it."""
    if args.tasks_per_step is not None and args.tasks_per_step < 1:
        raise UsageError(f"--tasks-per-step: expected at least 1, got {args.tasks_per_step}")
    if args.data_seed is not None and args.tasks_per_step is None:
        raise UsageError("--data-seed: only with --tasks-per-step")


def _rollout_server(args: argparse.Namespace) -> RolloutServer | None:
    """The server `--rollout-server` names (checked before the run folder is made), or
    None for in-process rollouts; UsageError for a bad kind or a stray --base-url."""
    from sprout.pipeline.rollout_server import RolloutServerError, rollout_server

    try:
        if args.rollout_server:
            return rollout_server(args.rollout_server, Path(args.out), args.base_url)
        if args.base_url:
            raise RolloutServerError("--base-url: only with --rollout-server sglang")
    except RolloutServerError as error:
        raise UsageError(str(error)) from None
    return None


def cmd_train_step(args: argparse.Namespace) -> int:
    try:
        return train_step.run(args)
    except LearnerError as error:
        raise UsageError(str(error)) from None


def _train_arguments(train: argparse.ArgumentParser) -> None:
    """`sprout train`'s own options: rollouts, samples and learner steps, repeated."""
    train.add_argument("--model", metavar="hf/PATH", help="the starting weights (a local model)")
    train.add_argument("--tasks", nargs="+", metavar="TASKS", help="task folders to roll out")
    train.add_argument("--steps", type=int, default=1, metavar="N", help="learner steps (1)")
    train.add_argument("--out", metavar="DIR", help="run folder: sprout.db, policy/step-K")
    train.add_argument(
        "--resume",
        action="store_true",
        help="go on after the last saved step of --out (same settings; --steps may grow)",
    )
    train.add_argument(
        "--tasks-per-step",
        type=int,
        metavar="N",
        help="play N tasks a step, drawn epoch by epoch by a seeded shuffle (default: every "
        "task every step)",
    )
    train.add_argument(
        "--data-seed", type=int, metavar="N", help="the seed of --tasks-per-step's draw (0)"
    )
    add_workers_argument(train, "a step's rollouts")
    train.add_argument("--roots", type=int, default=2, metavar="N", help="roots per task (2)")
    train.add_argument("--children", type=int, default=3, metavar="N", help="children per root (3)")
    train.add_argument(
        "--selector",
        default="reviewer",
        help="boundary chooser of unguided children: reviewer, heuristic, uniform, entropy",
    )
    train.add_argument(
        "--credit", default="grpo", help="advantages: grpo, drgrpo, tree or sibling (grpo)"
    )
    train.add_argument(
        "--no-train-starting-turn",
        action="store_true",
        help="mask the reviewer's starting turn out of the loss (trained by default)",
    )
    train.add_argument("--max-length", type=int, metavar="N", help="drop longer samples")
    train.add_argument("--max-turns", type=int, metavar="N", help="turns per attempt (8)")
    train.add_argument(
        "--max-new-tokens", type=int, default=256, metavar="N", help="tokens per reply (256)"
    )
    train.add_argument(
        "--rollout-server",
        metavar="KIND",
        help="sample rollouts from a server put on each step's weights: llamacpp (started "
        "and restarted by sprout on GGUF conversions) or sglang (yours, at --base-url; "
        "reloaded with /update_weights_from_disk); default: in process (hf/)",
    )
    train.add_argument(
        "--base-url", metavar="URL", help="the address of the --rollout-server sglang you run"
    )
    add_task_source_arguments(train)
    add_agent_config_argument(train)
    add_isolation_argument(train)
    add_ray_arguments(train, "docs/training.md")
    train.add_argument("--quiet", action="store_true", help="no progress lines")
    train_step.add_learner_arguments(train)
