"""`sprout train step`: one learner step on exported samples, logged, saved atomically.

Its options are the `LearnerConfig` fields a run most often changes; the rest
come from a `[learner]` table (`--config`), and options override the table.
torch is imported only once the arguments and the samples file have been read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sprout.train.batching import LearnerError

OPTIONS: dict[str, tuple[type, str]] = {
    "lr": (float, "AdamW learning rate (default 1e-6)"),
    "clip_low": (float, "ratio clip below 1 (default 0.2)"),
    "clip_high": (float, "ratio clip above 1 (default 0.28)"),
    "loss_agg": (str, "token-mean (default), seq-mean-token-sum or seq-mean-token-mean"),
    "old_logprobs": (str, "recompute (default), rollout or auto"),
    "temperature": (float, "divide the logits by this (the sampling temperature; default 1)"),
    "micro_batch_tokens": (int, "most tokens, padding included, per forward pass (default 4096)"),
    "micro_batch_samples": (int, "most sequences per forward pass (default: no limit)"),
    "weight_decay": (float, "AdamW weight decay (default 0.01)"),
    "max_grad_norm": (float, "clip the gradient norm to this (default 1.0)"),
    "dtype": (str, "compute precision: auto (default: bf16 on CUDA with bf16), fp32, bf16"),
    "param_dtype": (str, "weights and optimizer state: fp32 (default) or bf16"),
    "device": (str, "auto (default), cpu, cuda, cuda:N"),
}
"""LearnerConfig fields given as --options (field name with dashes)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `sprout train step`."""
    parser.add_argument(
        "--samples",
        required=True,
        metavar="FILE",
        help="samples written by `sprout export` (JSON Lines)",
    )
    parser.add_argument(
        "--format",
        default="jsonl",
        choices=("jsonl", "verl", "trl"),
        help="the export format of --samples (default jsonl)",
    )
    parser.add_argument(
        "--model", required=True, metavar="PATH", help="a Hugging Face model folder"
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="PATH",
        help="where to save the updated model (written beside, then renamed into place; may "
        "be --model itself)",
    )
    add_learner_arguments(parser)


def add_learner_arguments(parser: argparse.ArgumentParser) -> None:
    """--config and the learner options, shared by `sprout train` and `sprout train step`."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML file with a [learner] table (and, for `sprout train`, [actor]); options "
        "override it",
    )
    for field, (kind, text) in OPTIONS.items():
        metavar = {int: "N", float: "X"}.get(kind, "NAME")
        parser.add_argument(f"--{field.replace('_', '-')}", type=kind, metavar=metavar, help=text)
    parser.add_argument(
        "--no-share-prefixes",
        dest="share_prefixes",
        action="store_false",
        default=None,
        help="forward every child's retained prefix again (default: once, through its parent)",
    )


def learner_config(args: argparse.Namespace) -> Any:
    """The `[learner]` table of --config, overridden by the options given."""
    from sprout.train.learnerconfig import LearnerConfig

    try:
        base = LearnerConfig.from_file(args.config) if args.config else LearnerConfig()
    except ValueError as error:
        raise LearnerError(f"--config {error}") from None
    given = {
        field: getattr(args, field)
        for field in [*OPTIONS, "share_prefixes"]
        if getattr(args, field) is not None
    }
    try:
        return LearnerConfig.model_validate({**base.model_dump(), **given})
    except ValidationError as error:
        first = error.errors()[0]
        option = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "options"
        raise LearnerError(f"{option}: {first['msg']}") from None


def run(args: argparse.Namespace) -> int:
    """Read, check, step, save; print the stats as a JSON line and a readable line."""
    from sprout.train.export import ExportError, read_meta, read_samples
    from sprout.train.modelfolder import check_target

    config = learner_config(args)
    check_target(args.out)
    try:
        samples = read_samples(args.samples, args.format)
        meta = read_meta(args.samples) or {}
    except OSError as error:
        raise LearnerError(f"--samples {args.samples}: {error.strerror}") from None
    except ExportError as error:
        raise LearnerError(str(error)) from None
    if not samples:
        raise LearnerError(f"{args.samples}: no samples")

    import transformers

    from sprout.train.learner import Learner

    transformers.logging.disable_progress_bar()
    learner = Learner(args.model, config)
    learner.check_tokenizer(meta.get("tokenizer"), where=args.samples)
    for note in learner.notes:
        print(f"note: {note}", file=sys.stderr)
    stats = learner.step(samples)
    saved = learner.save(Path(args.out))
    print(json.dumps(stats.as_dict()))
    print(stats.line())
    print(f"saved {saved}")
    return 0
