"""`sprout run`: search methods on tasks, compared."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sprout.commands.common import (
    UsageError,
    add_agent_config_argument,
    add_isolation_argument,
    add_task_source_arguments,
    check_isolation,
    load_task_arguments,
    recorded_images,
    refuse_model_servers,
    usable_tasks,
    with_agent_config,
)
from sprout.commands.interrupt import INTERRUPTED, halting_on_ctrl_c
from sprout.commands.ray_options import add_ray_arguments, check_ray, on_cluster, ray_sandboxes
from sprout.commands.workers import add_workers_argument, workers
from sprout.errors import BAD_INPUT
from sprout.runfolder import RunFolder

if TYPE_CHECKING:
    from sprout.search import RunSettings
    from sprout.search.imported import ImportedRoot


def add_parser(commands: Any) -> None:
    """`sprout run`'s options, in the order its help lists them."""
    run = commands.add_parser(
        "run",
        help="run search methods (pass@k, pass@k-first, sprout, entropy, shepherd, "
        "train-rollouts) on tasks; compare",
        description="Run each --method on each task with --model; write DIR/sprout.db, "
        "DIR/results.json and print the comparison table. A task path is a task folder, a "
        "folder of task folders, or a file of SWE-bench rows (.jsonl, with --repos unless the "
        "rows name their images; SWE-bench Pro's also .parquet).",
    )
    _add_what_to_run(run)
    _add_schedule_arguments(run)
    run.add_argument(
        "--config",
        metavar="FILE",
        help="TOML settings: an [actor] table (docs/agent.md), a [roles] table (docs/roles.md) "
        "and a [model] table (timeouts, retries, max_tokens, context_tokens, extra_body; "
        "docs/agent.md)",
    )
    run.add_argument(
        "--base-url",
        metavar="URL[,URL...]",
        help="the model server's /v1 URL, or several serving the same model, comma-separated: "
        "calls go to the least busy, a failing one is skipped a while (docs/agent.md)",
    )
    add_agent_config_argument(run)
    run.add_argument(
        "--from-trajectories",
        metavar="DIR",
        help="mini-swe-agent trajectories (*.traj.json under DIR) as each method's roots, "
        "their checkpoints rebuilt by running their commands again; branch them with "
        "--method sprout (docs/integrations.md)",
    )
    add_task_source_arguments(run)
    add_isolation_argument(run)
    add_ray_arguments(run, "docs/run.md")
    run.add_argument("--quiet", action="store_true", help="no progress lines, only the table")
    run.set_defaults(func=cmd_run)


def _add_what_to_run(run: argparse.ArgumentParser) -> None:
    """The tasks, the model, the methods, and where and how wide the run goes."""
    run.add_argument(
        "tasks",
        nargs="+",
        metavar="TASKS",
        help="task folders, folders of them, or files of SWE-bench rows (.jsonl, .parquet)",
    )
    run.add_argument(
        "--model",
        required=True,
        metavar="M",
        help="openai/<name> (an OpenAI-compatible server: --base-url or OPENAI_BASE_URL, "
        "key in OPENAI_API_KEY), oracle[:think=<seconds>], or "
        "oracle-noise[:errors=independent|trap,p=<0..1>,"
        "q=<0..1>,seed=<int>,think=<seconds>] (a simulation: docs/run.md)",
    )
    run.add_argument(
        "--method",
        default="pass@4,sprout",
        metavar="LIST",
        help="comma-separated: pass@K (all K roots played), pass@K-first (stop at the first "
        "pass), sprout, entropy, shepherd (default: pass@4,sprout)",
    )
    run.add_argument("--out", required=True, metavar="DIR", help="the run folder to write")
    run.add_argument(
        "--resume", action="store_true", help="continue the run in --out where it stopped"
    )
    add_workers_argument(run, "attempts of a round, tasks side by side")


def _add_schedule_arguments(run: argparse.ArgumentParser) -> None:
    """The shapes of the branching schedules: sprout's and entropy's roots and rounds, and
    train-rollouts' groups and boundary selector."""
    run.add_argument(
        "--roots",
        type=int,
        metavar="N",
        help="roots of sprout and entropy (default 1) and of train-rollouts (default 2)",
    )
    run.add_argument(
        "--rounds",
        default="4,3",
        metavar="LIST",
        help="branches per round of sprout and entropy (default 4,3)",
    )
    run.add_argument(
        "--keep-going",
        action="store_true",
        help="play every round even after a pass (default: stop at the first pass)",
    )
    run.add_argument(
        "--children", type=int, metavar="N", help="train-rollouts: children per root (default 3)"
    )
    run.add_argument(
        "--group-size",
        type=int,
        metavar="N",
        help="train-rollouts: rollouts per task, roots x (1 + children); sets --children",
    )
    run.add_argument(
        "--selector",
        default="reviewer",
        metavar="NAME",
        help="train-rollouts: who picks an unguided child's boundary: reviewer (default), "
        "heuristic, uniform or entropy",
    )
    run.add_argument(
        "--selector-seed",
        type=int,
        default=0,
        metavar="N",
        help="train-rollouts: the seed of --selector uniform (default 0)",
    )


def cmd_run(args: argparse.Namespace) -> int:
    """Play every method on every task into --out and print the table; the run folder is
    closed (and its report written) whatever stops the run, before the exit code is told."""
    from sprout.search import Progress, open_run, run_tasks, table
    from sprout.search.halt import Halt
    from sprout.search.runner import shared_model
    from sprout.tree import RunMeta

    settings = _settings(args)
    # built once, now, so that what it cannot be (no --base-url, say) costs nothing; a model
    # that loads weights in-process loads as the run starts
    model = None if settings.model.loads else shared_model(settings)
    refuse_model_servers([settings.base_url or os.environ.get("OPENAI_BASE_URL")])
    check_ray(args)
    recorded = recorded_images(Path(args.out) / "results.json") if args.resume else None
    loaded = usable_tasks(load_task_arguments(args.tasks, args, recorded), "run")
    imported = _imported(args, [task.id for task in loaded.tasks])
    report = check_isolation(args.out, args.isolation, "run")
    with on_cluster(args):  # joined first: a cluster that cannot be reached costs no run folder
        run = open_run(args.out, settings, resume=args.resume)
        halt = Halt()
        try:
            run.tree.update_meta(
                RunMeta(
                    isolation=report.to_json(),
                    # what the loaders guessed (a Dockerfile line they skip, say)
                    task_warnings={t.id: list(t.warnings) for t in loaded.tasks if t.warnings},
                    images=loaded.images,  # each task's image: how, which digest
                )
            )
            tag = "" if report.holds else "[NO ISOLATION]"
            progress = Progress(quiet=args.quiet, tag=tag)
            with ray_sandboxes(args, run) as sandboxes, halting_on_ctrl_c(halt, "run") as ctrl_c:
                content = run_tasks(
                    loaded.tasks, run, settings, progress, halt, sandboxes, imported, model
                )
            page = _write_report(run)
        finally:
            run.close()
    print()
    print(table(content))
    print(f"\nresults: {Path(args.out) / 'results.json'}")
    if page is not None:
        print(f"report: {page}")
    if ctrl_c.pressed:
        print(f"interrupted: `sprout run ... --out {args.out} --resume` continues", file=sys.stderr)
        return INTERRUPTED
    if halt.reason is not None:
        print(f"sprout run: stopped early: {halt.reason}", file=sys.stderr)
        return 1
    return BAD_INPUT if loaded.errors else _outcome(content)


def _settings(args: argparse.Namespace) -> RunSettings:
    """The run's settings from the options and --config, checked before any task is loaded
    or the run folder is touched, so a typo costs nothing."""
    from sprout.agent import ActorConfig
    from sprout.models.config import ModelConfig
    from sprout.models.resolve import ModelSpec
    from sprout.roles import RolesConfig
    from sprout.search import RunSettings, parse_methods, parse_rounds
    from sprout.search.runner import check_settings

    methods = parse_methods(
        args.method,
        roots=args.roots,
        rounds=parse_rounds(args.rounds),
        stop_at_pass=not args.keep_going,
        children=args.children,
        group_size=args.group_size,
        selector=args.selector,
        seed=args.selector_seed,
    )
    try:
        actor = ActorConfig.from_file(args.config) if args.config else ActorConfig()
        roles = RolesConfig.from_file(args.config) if args.config else RolesConfig()
        model = ModelConfig.from_file(args.config) if args.config else ModelConfig()
    except ValueError as error:
        raise UsageError(f"--config {error}") from None
    actor = with_agent_config(actor, args)
    settings = RunSettings(
        model=ModelSpec.parse(args.model),
        methods=methods,
        workers=workers(args),
        base_url=args.base_url,
        actor=actor,
        roles=roles,
        model_options=model,
    )
    check_settings(settings)
    return settings


def _imported(args: argparse.Namespace, task_ids: list[str]) -> dict[str, list[ImportedRoot]]:
    """`--from-trajectories`: each trajectory read as a root of its task, before the run
    folder is touched, so a file that cannot be adopted costs nothing."""
    if args.from_trajectories is None:
        return {}
    from sprout.integrations.minisweagent.trajectory import imported_roots

    return imported_roots(Path(args.from_trajectories), task_ids)


def _outcome(content: dict[str, Any]) -> int:
    """1 when a method could not be played on some task (the `error` results.json gives it),
    else 0: a run that played every task succeeded, whether the tasks passed or not."""
    failed = [
        task for task, by in content["tasks"].items() if any("error" in r for r in by.values())
    ]
    return 1 if failed else 0


def _write_report(run: RunFolder) -> Path | None:
    """report.html for the run; a report that cannot be written is a warning, since the
    run itself (sprout.db, results.json) is complete."""
    from sprout.viewer import ViewerError
    from sprout.viewer.report import write_report

    try:
        return write_report(run)
    except (ViewerError, OSError) as error:
        print(f"warning: report.html not written: {error}", file=sys.stderr)
        return None
