"""The `sprout` command. Each subcommand parses its arguments and calls a module."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sprout.models import ModelError
from sprout.runfolder import RunFolder, RunFolderError, parse_checkpoint_ref
from sprout.sandbox import LayerStore, Sandbox, SandboxError
from sprout.store import StoreError
from sprout.task import TaskError
from sprout.train import step as train_step
from sprout.train.batching import LearnerError
from sprout.train.credit import CREDITS
from sprout.train.export import FORMATS
from sprout.tree import TreeError

BAD_INPUT = 2


class UsageError(Exception):
    """Bad input found after parsing: printed as one line, exit code 2."""


def _benchmarks_dir() -> Path:
    """benchmarks/ of the source checkout (the package is installed in editable mode)."""
    configured = os.environ.get("SPROUT_BENCHMARKS")
    candidates = [Path(configured)] if configured else []
    candidates += [Path(__file__).resolve().parents[2] / "benchmarks", Path.cwd() / "benchmarks"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise UsageError(
        "benchmarks/: not found beside the source tree or in the current directory; "
        "run from a checkout of sprout-rl or set SPROUT_BENCHMARKS"
    )


def available_benchmarks() -> list[str]:
    try:
        return sorted(p.stem for p in _benchmarks_dir().glob("*.py") if not p.stem.startswith("_"))
    except UsageError:
        return []


def cmd_bench(args: argparse.Namespace) -> int:
    path = _benchmarks_dir() / f"{args.name}.py"
    if not path.is_file():
        names = ", ".join(available_benchmarks()) or "none found"
        raise UsageError(f"bench {args.name}: no such benchmark (available: {names})")
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # so a benchmark imports its siblings (_stats)
    spec = importlib.util.spec_from_file_location(f"sprout_bench_{args.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return int(module.main(args.options))


def cmd_gc(args: argparse.Namespace) -> int:
    if not os.path.isfile(os.path.join(args.store, "store.json")):
        raise UsageError(f"{args.store}: not a layer store (no store.json)")
    store = LayerStore(args.store)
    freed = store.gc(keep=args.keep)
    print(f"freed {freed / 1e6:.1f} MB; {len(store.layers())} layers kept")
    return 0


def cmd_shell(args: argparse.Namespace) -> int:
    attempt_id, boundary = parse_checkpoint_ref(args.checkpoint)
    run = RunFolder.open(args.run)
    try:
        tree = run.tree
        attempt = tree.attempt(attempt_id)
        boundary = tree.last_index(attempt) if boundary is None else boundary
        checkpoint = tree.checkpoint(attempt, boundary)
        with Sandbox.fork(run.layers, checkpoint) as sandbox:
            print(
                f"sprout shell: attempt {attempt_id} after turn {boundary} (layer {checkpoint}), "
                f"in {sandbox.config.workdir}; a throw-away fork: changes go when you exit",
                file=sys.stderr,
            )
            return sandbox.shell()
    finally:
        run.close()


def cmd_run(args: argparse.Namespace) -> int:
    from sprout.search import MethodError, RunSettingsError

    try:
        return _run(args)
    except (MethodError, RunSettingsError) as error:
        raise UsageError(str(error)) from None


def _run(args: argparse.Namespace) -> int:
    from sprout.agent import ActorConfig
    from sprout.roles import RolesConfig
    from sprout.search import (
        Progress,
        RunSettings,
        open_run,
        parse_methods,
        parse_rounds,
        run_tasks,
        table,
    )
    from sprout.search.run import check_settings
    from sprout.tasks import load_tasks
    from sprout.tasks.discover import grouped_warnings

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
    except ValueError as error:
        raise UsageError(f"--config {error}") from None
    settings = RunSettings(
        model=args.model,
        methods=methods,
        workers=args.workers,
        base_url=args.base_url,
        actor=actor,
        roles=roles,
    )
    check_settings(settings)
    loaded = load_tasks(args.tasks, images=_image_table(args.images), repos=args.repos)
    for error in loaded.errors:
        print(f"sprout run: skipped: {error}", file=sys.stderr)
    for line in grouped_warnings((task.id, task.warnings) for task in loaded.tasks):
        print(f"warning: {line}", file=sys.stderr)
    if not loaded.tasks:
        raise UsageError("no task could be loaded (see the lines above)")
    run = open_run(args.out, settings, resume=args.resume)
    try:
        content = run_tasks(loaded.tasks, run, settings, Progress(quiet=args.quiet))
        report = _write_report(run)
    finally:
        run.close()
    print()
    print(table(content))
    print(f"\nresults: {Path(args.out) / 'results.json'}")
    if report is not None:
        print(f"report: {report}")
    if loaded.errors:
        return BAD_INPUT
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


def cmd_view(args: argparse.Namespace) -> int:
    from sprout.viewer.server import serve

    try:
        return serve(args.run, args.port)
    except OSError as error:
        raise UsageError(f"--port {args.port}: cannot listen on 127.0.0.1 ({error})") from None


def cmd_tasks_check(args: argparse.Namespace) -> int:
    import shutil
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    from sprout import taskcheck
    from sprout.tasks import load_tasks

    if args.workers < 1:
        raise UsageError(f"--workers {args.workers}: expected at least 1")
    loaded = load_tasks(args.paths, images=_image_table(args.images), repos=args.repos)
    results = [taskcheck.load_failure(line) for line in loaded.errors]
    names = [result.task_id for result in results] + [task.id for task in loaded.tasks]
    width = max([len("task"), *map(len, names)])
    print(taskcheck.table_header(width))
    for result in results:
        print(taskcheck.table_row(result, width), flush=True)
    out = args.out or tempfile.mkdtemp(prefix="sprout-check-")
    run = RunFolder.create(out)
    try:
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            for result in pool.map(lambda task: taskcheck.check_task(task, run), loaded.tasks):
                results.append(result)
                print(taskcheck.table_row(result, width), flush=True)
    finally:
        run.close()
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)
    print(taskcheck.summary_line(results))
    for line in taskcheck.warning_lines(results):
        print(f"warning: {line}", file=sys.stderr)
    if args.out:
        attempts = ", ".join(f"{r.task_id} {r.attempt_id}" for r in results if r.attempt_id)
        print(f"run folder: {args.out}; oracle attempts: {attempts or 'none'}")
        print(f"  open one at turn k with `sprout shell {args.out} ATTEMPT:k`")
    return 0 if all(result.ok for result in results) else 1


def cmd_export(args: argparse.Namespace) -> int:
    from sprout.train.credit import CreditError
    from sprout.train.export import ExportError, export_run
    from sprout.train.samples import SampleError

    try:
        path, report = export_run(
            args.run,
            args.format,
            args.out,
            methods=args.method or None,
            credit=args.credit,
            train_starting_turn=not args.no_starting_turn,
            max_length=args.max_length,
            overlong="drop" if args.drop_overlong else "error",
        )
    except (SampleError, ExportError, CreditError) as error:
        raise UsageError(str(error)) from None
    print(f"{report.describe()}\n{args.format} records: {path}")
    for line in (*report.unfinished, *report.dropped):
        print(f"  left out: {line}", file=sys.stderr)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from sprout.models.hf import TOKENIZER_META  # noqa: F401  (fails early without the extra)
    from sprout.search import MethodError
    from sprout.train.samples import SampleError

    if args.model is None or args.tasks is None or args.out is None:
        raise UsageError(
            "give --model hf/PATH --tasks TASKS --steps N --out DIR, or a subcommand: step"
        )
    try:
        return _train(args)
    except (LearnerError, SampleError, MethodError) as error:
        raise UsageError(str(error)) from None


def _train(args: argparse.Namespace) -> int:
    import transformers

    from sprout.agent import ActorConfig
    from sprout.search import Progress
    from sprout.tasks import load_tasks
    from sprout.train.loop import TrainResumeError, TrainSettings, train

    if not args.model.startswith("hf/"):
        raise UsageError(f"--model {args.model}: training needs a local model, hf/PATH")
    if args.steps < 1:
        raise UsageError(f"--steps: expected at least 1, got {args.steps}")
    try:
        actor = ActorConfig.from_file(args.config) if args.config else ActorConfig(max_turns=8)
        learner = train_step.learner_config(args)
    except ValueError as error:
        raise UsageError(f"--config {error}") from None
    if args.max_turns is not None:
        actor = actor.model_copy(update={"max_turns": args.max_turns})
    loaded = load_tasks(args.tasks, images=_image_table(args.images), repos=args.repos)
    for error in loaded.errors:
        print(f"sprout train: skipped: {error}", file=sys.stderr)
    if not loaded.tasks:
        raise UsageError("no task could be loaded (see the lines above)")
    settings = TrainSettings(
        model=Path(args.model.removeprefix("hf/")),
        steps=args.steps,
        roots=args.roots,
        children=args.children,
        selector=args.selector,
        credit=args.credit,
        train_starting_turn=not args.no_train_starting_turn,
        max_length=args.max_length,
        workers=args.workers,
        actor=actor,
        hf_options={"max_new_tokens": args.max_new_tokens, "device": learner.device},
        learner=learner,
    )
    transformers.logging.disable_progress_bar()
    run = RunFolder.create(args.out) if args.resume else RunFolder.create_new(args.out)
    try:
        history = train(loaded.tasks, run, settings, Progress(quiet=args.quiet))
    except TrainResumeError as error:
        raise UsageError(str(error)) from None
    finally:
        run.close()
    print(f"\n{len(history)} steps run now; log: {Path(args.out) / 'train.jsonl'}")
    return BAD_INPUT if loaded.errors else 0


def cmd_train_step(args: argparse.Namespace) -> int:
    try:
        return train_step.run(args)
    except LearnerError as error:
        raise UsageError(str(error)) from None


def _image_table(path: str | None) -> dict[str, str] | None:
    if path is None:
        return None
    from sprout.tasks.discover import load_image_table

    return load_image_table(path)


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
    train.add_argument("--workers", type=int, default=1, metavar="N", help="sandboxes at once")
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
    train.add_argument("--images", metavar="FILE", help="TOML [images] table")
    train.add_argument("--repos", metavar="DIR", help="local clones of SWE-bench repositories")
    train.add_argument("--quiet", action="store_true", help="no progress lines")
    train_step.add_learner_arguments(train)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sprout",
        description="Checkpoint every turn of a coding agent; branch from the turn before "
        "the mistake.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    bench = commands.add_parser(
        "bench",
        help="run a benchmark from benchmarks/ (sandbox, learner, viewer)",
        description="Run benchmarks/NAME.py; options after NAME go to the benchmark "
        "(try `sprout bench sandbox --help`).",
    )
    bench.add_argument("name", metavar="NAME", help="benchmark name, e.g. sandbox")
    bench.add_argument("options", nargs=argparse.REMAINDER, help="options for the benchmark")
    bench.set_defaults(func=cmd_bench)

    gc = commands.add_parser(
        "gc",
        help="free layers of a layer store that no kept checkpoint stacks on",
        description="Free every layer that neither a --keep checkpoint nor an open sandbox "
        "stacks on.",
    )
    gc.add_argument("store", metavar="STORE", help="layer store directory")
    gc.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="ID",
        help="checkpoint id to keep, with all it stacks on (repeatable)",
    )
    gc.set_defaults(func=cmd_gc)

    shell = commands.add_parser(
        "shell",
        help="an interactive shell in a throw-away fork of any stored checkpoint",
        description="Open a shell in a throw-away fork of checkpoint ATTEMPT:k of a run "
        "(k = 0 is the untouched task; ATTEMPT alone means its last turn). "
        "Nothing you do there is saved.",
    )
    shell.add_argument("run", metavar="RUN", help="run folder (holds sprout.db and layers/)")
    shell.add_argument("checkpoint", metavar="ATTEMPT:k", help="attempt id and turn boundary")
    shell.set_defaults(func=cmd_shell)

    view = commands.add_parser(
        "view",
        help="the episode viewer: a run's search trees in the browser, on 127.0.0.1",
        description="Serve the episode viewer of RUN on 127.0.0.1:PORT: every task's tree "
        "of attempts, each turn in full, the verifier's, analyst's and reviewer's notes, and "
        "the methods side by side (docs/viewer.md). A run still being written updates live.",
    )
    view.add_argument("run", metavar="RUN_DIR", help="run folder (holds sprout.db and layers/)")
    view.add_argument(
        "--port", type=int, default=8000, metavar="P", help="port on 127.0.0.1 (default 8000)"
    )
    view.set_defaults(func=cmd_view)

    run = commands.add_parser(
        "run",
        help="run search methods (pass@k, sprout, entropy, train-rollouts) on tasks; compare",
        description="Run each --method on each task with --model; write DIR/sprout.db, "
        "DIR/results.json and print the comparison table. A task path is a task folder, a "
        "folder of task folders, or a SWE-bench .jsonl file (with --repos).",
    )
    run.add_argument(
        "tasks",
        nargs="+",
        metavar="TASKS",
        help="task folders, folders of them, or SWE-bench .jsonl files",
    )
    run.add_argument(
        "--model",
        required=True,
        metavar="M",
        help="openai/<name> (an OpenAI-compatible server: --base-url or OPENAI_BASE_URL, "
        "key in OPENAI_API_KEY), oracle, or oracle-noise[:p=<0..1>,seed=<int>]",
    )
    run.add_argument(
        "--method",
        default="pass@4,sprout",
        metavar="LIST",
        help="comma-separated: pass@K, sprout, entropy (default: pass@4,sprout)",
    )
    run.add_argument("--out", required=True, metavar="DIR", help="the run folder to write")
    run.add_argument(
        "--resume", action="store_true", help="continue the run in --out where it stopped"
    )
    run.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="sandboxes running at once: attempts of a round, tasks side by side (default 1)",
    )
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
    run.add_argument(
        "--config",
        metavar="FILE",
        help="TOML settings: an [actor] table (docs/agent.md) and a [roles] table (docs/roles.md)",
    )
    run.add_argument("--base-url", metavar="URL", help="the OpenAI-compatible server's /v1 URL")
    run.add_argument(
        "--images", metavar="FILE", help="TOML [images] table: FROM name -> root-filesystem folder"
    )
    run.add_argument("--repos", metavar="DIR", help="local clones of SWE-bench repositories")
    run.add_argument("--quiet", action="store_true", help="no progress lines, only the table")
    run.set_defaults(func=cmd_run)

    export = commands.add_parser(
        "export",
        help="write a run's GRPO groups as training records for verl, TRL or sprout (jsonl)",
        description="Build the token-exact samples of every finished group of RUN (a task's "
        "rollouts under one method) with their advantages, and write them to FILE as JSON "
        "Lines records of --format (docs/training.md shows how each trainer loads them).",
    )
    export.add_argument("run", metavar="RUN", help="run folder (holds sprout.db)")
    export.add_argument("--format", required=True, choices=FORMATS, help="the records' format")
    export.add_argument("--out", required=True, metavar="FILE", help="the .jsonl file to write")
    export.add_argument(
        "--method",
        action="append",
        metavar="NAME",
        help="export only this method's groups (repeatable; default: every method)",
    )
    export.add_argument(
        "--credit",
        default="grpo",
        choices=CREDITS,
        help="how advantages are computed (default grpo)",
    )
    export.add_argument(
        "--no-starting-turn",
        action="store_true",
        help="do not train the reviewer-written starting turns (default: trained)",
    )
    export.add_argument(
        "--max-length", type=int, metavar="N", help="refuse samples longer than N tokens"
    )
    export.add_argument(
        "--drop-overlong",
        action="store_true",
        help="with --max-length: leave longer samples out (named) instead of refusing",
    )
    export.set_defaults(func=cmd_export)

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

    tasks = commands.add_parser(
        "tasks", help="work with task folders (check)", description="Work with task folders."
    )
    task_commands = tasks.add_subparsers(dest="tasks_command", required=True, metavar="COMMAND")
    check = task_commands.add_parser(
        "check",
        help="check that each task fails untouched and passes with its reference solution",
        description="For each task: build its base layer, run the verifier on the untouched "
        "environment (it must fail), play the reference solution with the oracle model "
        "through the actor and run the verifier again (it must pass). Exit 0 when every "
        "task is sound, 1 when any is broken, 2 for bad input.",
    )
    check.add_argument(
        "paths", nargs="+", metavar="PATHS", help="task folders or folders of task folders"
    )
    check.add_argument(
        "--out",
        metavar="DIR",
        help="keep the run folder here, for `sprout shell DIR ATTEMPT:k` (default: a "
        "temporary folder, removed at the end)",
    )
    check.add_argument(
        "--workers", type=int, default=1, metavar="N", help="tasks checked at once (default 1)"
    )
    check.add_argument(
        "--images", metavar="FILE", help="TOML [images] table: FROM name -> root-filesystem folder"
    )
    check.add_argument("--repos", metavar="DIR", help="local clones of SWE-bench repositories")
    check.set_defaults(func=cmd_tasks_check, name="tasks check")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (
        UsageError,
        SandboxError,
        TreeError,
        RunFolderError,
        StoreError,
        TaskError,
        ModelError,
    ) as error:
        print(f"sprout {getattr(args, 'name', args.command)}: {error}", file=sys.stderr)
        return BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
