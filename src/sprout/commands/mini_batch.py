"""`sprout mini-batch`: mini-swe-agent on many tasks, each on sprout's environment."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sprout.commands.common import (
    UsageError,
    add_task_source_arguments,
    load_task_arguments,
    usable_tasks,
)

DEFAULT_SPEC = "mini:swebench"


def add_parser(commands: Any) -> None:
    batch = commands.add_parser(
        "mini-batch",
        help="mini-swe-agent's DefaultAgent on tasks, each on sprout's environment (a "
        "checkpoint per step), written as mini-extra swebench writes",
        description="Run mini-swe-agent's DefaultAgent on each task, in sprout's jail: "
        "OUT/preds.json, OUT/ID/ID.traj.json as mini-extra swebench writes them, and "
        "OUT/ID/run, a sprout run with a checkpoint per step (docs/integrations.md).",
    )
    batch.add_argument(
        "tasks",
        nargs="+",
        metavar="TASKS",
        help="task folders, folders of them, or SWE-bench .jsonl files",
    )
    batch.add_argument(
        "-m", "--model", metavar="NAME", help="the model mini-swe-agent calls (model.model_name)"
    )
    batch.add_argument(
        "--model-class", metavar="CLASS", help="mini-swe-agent's model class (model.model_class)"
    )
    batch.add_argument(
        "--agent-config",
        metavar="SPEC",
        action="append",
        help=f"mini-swe-agent configs, as its -c takes them, plus mini:NAME for one it ships; "
        f"repeat to merge (default: {DEFAULT_SPEC})",
    )
    batch.add_argument("-o", "--out", required=True, metavar="DIR", help="the folder to write")
    batch.add_argument(
        "--redo-existing", action="store_true", help="run again the tasks preds.json holds"
    )
    batch.add_argument(
        "-w", "--workers", type=int, default=1, metavar="N", help="tasks at once (default 1)"
    )
    add_task_source_arguments(batch)
    batch.set_defaults(func=cmd_mini_batch)


def cmd_mini_batch(args: argparse.Namespace) -> int:
    """0 when every task ran to an end of mini-swe-agent's agent (submitted or a limit),
    1 when one ended in an error: an error is no failed task, so it is said apart."""
    from sprout.integrations.minisweagent.batch import run_batch
    from sprout.integrations.minisweagent.trajectory import AGENT_EXITS

    if args.workers < 1:
        raise UsageError(f"--workers: expected at least 1, got {args.workers}")
    config = _config(args)
    loaded = usable_tasks(load_task_arguments(args.tasks, args), "mini-batch")
    results = run_batch(
        loaded.tasks,
        config,
        Path(args.out),
        workers=args.workers,
        redo_existing=args.redo_existing,
    )
    errors = [r for r in results if r.exit_status not in AGENT_EXITS]
    print(f"{len(results) - len(errors)} of {len(results)} tasks ran to their agent's end")
    for result in errors:
        print(f"sprout mini-batch: {result.instance_id}: {result.exit_status}", file=sys.stderr)
    return 1 if errors else 0


def _config(args: argparse.Namespace) -> dict[str, Any]:
    """The specs merged as mini-swe-agent merges them, checked key by key, with -m and
    --model-class over them."""
    from sprout.integrations.minisweagent.agent_config import (
        check_keys,
        load_spec,
        recursive_merge,
    )

    specs = args.agent_config or [DEFAULT_SPEC]
    loaded = [(spec, load_spec(spec)) for spec in specs]
    for spec, config in loaded:
        check_keys(spec, config)
    model = {
        key: value
        for key, value in (("model_name", args.model), ("model_class", args.model_class))
        if value
    }
    return recursive_merge(*(config for _, config in loaded), {"model": model})
