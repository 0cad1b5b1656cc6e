"""Learner benchmark: a step with each shared prefix forwarded once, beside every prefix duplicated.

Run it with `sprout bench learner [options]`. The batch has the training
schedule's shape: G tasks, each with 2 roots and 3 children per root; a child
keeps its root's tokens up to a turn boundary (its retained prefix, loss mask
0) and continues with turns of its own until it is as long as its root.
Completions are trained, prompts and observations are not. Token ids are random
(the model is random too): what is measured is the cost, not what it learns.

One learner step (`sprout.train.learner.Learner.step`: a no-grad pass for the
old log-probs, a forward and backward pass, gradient clipping, AdamW) is timed
in two modes, on the same starting weights, alternating A, B, A, B so that
drift in the machine hits both alike:

- prefix once (`share_prefixes = true`): each root is forwarded in full; each
  child from the end of its prefix only, its queries attending to the root's
  keys and values, which stay in the autograd graph (the backward pass goes
  through each prefix once, with the gradients of the root and its children
  summed: the same gradient);
- prefix duplicated (`share_prefixes = false`): every sample is forwarded in
  full, prefix included, as a plain Hugging Face trainer does.

Reported per model: tokens per forward pass (without padding: what the model
computes; with padding: what the micro-batch tensors hold; a step makes two
passes), step time p50 and p90 over the repeats, tokens of the batch per
second, the time of one no-grad pass alone (`Learner.logprobs`, timed after
each step: forward only, no backward, no optimizer), the ratios of the two
modes, and the largest gradient difference between them (one `accumulate`
each before timing: they must agree). On CUDA, the peak memory of each mode.
Results go to a table on stdout and to JSON (`--out`).
"""

import argparse
import datetime
import random
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _stats as stats

MODES = {"prefix once": True, "prefix duplicated": False}
"""Mode name -> LearnerConfig.share_prefixes."""

MODELS: dict[str, dict[str, Any]] = {
    "tiny": {},
    "small": {
        "hidden_size": 256,
        "intermediate_size": 688,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
    },
    "smollm2-135m": {
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "vocab_size": 49152,
        "max_position_embeddings": 8192,
    },
}
"""Random Llama models: `tiny` is the test model (sprout.train.tiny, ~30k parameters);
`small` is big enough for times to mean something on a CPU; `smollm2-135m` has
SmolLM2-135M's shape (random weights, for a GPU)."""


def build_model(kind: str, folder: Path) -> Path:
    """A model folder of the given kind, with the tiny model's tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from sprout.train.tiny import build_tiny_model

    path = build_tiny_model(folder / kind)
    if not MODELS[kind]:
        return path
    config = LlamaConfig.from_pretrained(path)
    for key, value in MODELS[kind].items():
        setattr(config, key, value)
    config.head_dim = config.hidden_size // config.num_attention_heads
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    return path


def make_batch(
    tasks: int, roots: int, children: int, length: int, vocab: int, seed: int
) -> list[Any]:
    """Samples shaped like a training step's groups (see the module docstring)."""
    from sprout.train.samples import Sample

    rng = random.Random(seed)

    def turns(ids: list[int], mask: list[int], boundaries: list[int] | None) -> None:
        while len(ids) < length:
            for trained, (low, high) in ((1, (20, 60)), (0, (30, 120))):
                n = min(rng.randint(low, high), length - len(ids))
                ids += [rng.randrange(3, vocab) for _ in range(n)]
                mask += [trained] * n
            if boundaries is not None and len(ids) < length:
                boundaries.append(len(ids))

    samples = []
    attempt = 0
    for task in range(tasks):
        group = f"task-{task}/train-rollouts"
        made: list[tuple[int, int | None, list[int], list[int], int]] = []
        for _ in range(roots):
            attempt += 1
            root_id = attempt
            ids = [rng.randrange(3, vocab) for _ in range(length // 5)]  # the prompt
            mask = [0] * len(ids)
            boundaries: list[int] = []
            turns(ids, mask, boundaries)
            made.append((root_id, None, ids, mask, 0))
            middle = boundaries[len(boundaries) // 4 : max(len(boundaries) * 3 // 4, 1)]
            for _ in range(children):
                attempt += 1
                cut = rng.choice(middle or boundaries or [length // 5])
                child_ids, child_mask = ids[:cut], [0] * cut
                turns(child_ids, child_mask, None)
                made.append((attempt, root_id, child_ids, child_mask, cut))
        rewards = [float(rng.random() < 0.5) for _ in made]
        mean = sum(rewards) / len(rewards)
        for (aid, parent, ids, mask, cut), reward in zip(made, rewards, strict=True):
            samples.append(
                Sample(
                    task_id=f"task-{task}",
                    group_id=group,
                    attempt_id=aid,
                    parent_id=parent,
                    reward=reward,
                    input_ids=tuple(ids),
                    loss_mask=tuple(mask),
                    advantages=tuple((reward - mean) * m for m in mask),
                    rollout_logprobs=(None,) * len(ids),
                    prefix_tokens=cut,
                )
            )
    return samples


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _gradients(learner: Any) -> Any:
    import torch

    return torch.cat([p.grad.flatten().float() for p in learner.model.parameters()])


def bench_model(kind: str, path: Path, args: argparse.Namespace, log: Any) -> dict[str, Any]:
    """Both modes on one model: gradient agreement, then interleaved timed steps."""
    import torch

    from sprout.train.learner import Learner, LearnerConfig

    learners = {
        mode: Learner(
            path,
            LearnerConfig(
                share_prefixes=share,
                device=args.device,
                dtype=args.dtype,
                micro_batch_tokens=args.micro_batch_tokens,
                lr=1e-6,
            ),
        )
        for mode, share in MODES.items()
    }
    first = next(iter(learners.values()))
    vocab = first.model.get_input_embeddings().num_embeddings
    batch = make_batch(args.tasks, 2, 3, args.length, vocab, args.seed)
    params = sum(p.numel() for p in first.model.parameters())
    log(f"{kind}: {params:,} parameters, {len(batch)} samples, device {first.device}")

    grads = {}
    figures: dict[str, dict[str, Any]] = {}
    for mode, learner in learners.items():
        step = learner.accumulate(batch)
        grads[mode] = _gradients(learner)
        learner.optimizer.zero_grad(set_to_none=True)
        figures[mode] = {
            "tokens_in_batch": step.tokens_in_batch,
            "tokens_trained": step.tokens_trained,
            "tokens_forwarded_per_pass": step.tokens_forwarded,
            "tokens_padded_per_pass": step.tokens_padded,
            "micro_batches": step.micro_batches,
            "loss": step.loss,
        }
    once, duplicated = grads.values()
    gap = float((once - duplicated).abs().max() / duplicated.abs().max().clamp(min=1e-30))

    times: dict[str, list[float]] = {mode: [] for mode in learners}
    passes: dict[str, list[float]] = {mode: [] for mode in learners}
    peak: dict[str, int] = {}
    for i in range(args.warmup + args.repeat):
        for mode, learner in learners.items():
            if first.device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(first.device)
            _sync(first.device)
            start = time.perf_counter()
            learner.step(batch)
            _sync(first.device)
            middle = time.perf_counter()
            learner.logprobs(batch)
            _sync(first.device)
            if i >= args.warmup:
                times[mode].append(middle - start)
                passes[mode].append(time.perf_counter() - middle)
            if first.device.type == "cuda":
                peak[mode] = max(peak.get(mode, 0), torch.cuda.max_memory_allocated(first.device))
        log(f"{kind}: step {i + 1}/{args.warmup + args.repeat}")
    for mode in learners:
        figures[mode]["step"] = stats.summary(times[mode])
        figures[mode]["no_grad_pass"] = stats.summary(passes[mode])
        figures[mode]["tokens_per_s"] = figures[mode]["tokens_in_batch"] / (
            figures[mode]["step"]["p50_ms"] / 1e3
        )
        if mode in peak:
            figures[mode]["peak_memory_bytes"] = peak[mode]
    a, b = figures["prefix once"], figures["prefix duplicated"]
    return {
        "model": kind,
        "parameters": params,
        "device": str(first.device),
        "compute_dtype": str(first.autocast or next(first.model.parameters()).dtype).removeprefix(
            "torch."
        ),
        "samples": len(batch),
        "modes": figures,
        "gradient_max_rel_diff": gap,
        "tokens_ratio": a["tokens_forwarded_per_pass"] / b["tokens_forwarded_per_pass"],
        "step_time_ratio_p50": a["step"]["p50_ms"] / b["step"]["p50_ms"],
        "no_grad_pass_ratio_p50": a["no_grad_pass"]["p50_ms"] / b["no_grad_pass"]["p50_ms"],
    }


def table(results: list[dict[str, Any]], markdown: bool) -> str:
    header = [
        "model",
        "mode",
        "tokens/pass",
        "with padding",
        "step p50",
        "step p90",
        "batch tokens/s",
        "no-grad pass p50",
        "tokens vs dup.",
        "step vs dup.",
        "pass vs dup.",
        "grad diff",
    ]
    rows = [header]
    for r in results:
        for mode, f in r["modes"].items():
            same = mode == "prefix duplicated"
            rows.append(
                [
                    f"{r['model']} ({r['parameters']:,}, {r['device']}, {r['compute_dtype']})",
                    mode,
                    f"{f['tokens_forwarded_per_pass']:,}",
                    f"{f['tokens_padded_per_pass']:,}",
                    stats.fmt_ms(f["step"]["p50_ms"]),
                    stats.fmt_ms(f["step"]["p90_ms"]),
                    f"{f['tokens_per_s']:,.0f}",
                    stats.fmt_ms(f["no_grad_pass"]["p50_ms"]),
                    "" if same else f"{r['tokens_ratio']:.3f}x",
                    "" if same else stats.fmt_ratio(r["step_time_ratio_p50"]),
                    "" if same else stats.fmt_ratio(r["no_grad_pass_ratio_p50"]),
                    "" if same else f"{r['gradient_max_rel_diff']:.1e}",
                ]
            )
    return stats.render_table(rows, markdown=markdown)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sprout bench learner",
        description="Time one learner step with each shared prefix forwarded once and with "
        "every prefix duplicated, on random Llama models, in one run.",
    )
    parser.add_argument("--out", default="bench-results/learner.json", metavar="PATH")
    parser.add_argument(
        "--models",
        default="tiny,small",
        metavar="LIST",
        help=f"comma-separated, of {', '.join(MODELS)} (default: %(default)s)",
    )
    parser.add_argument(
        "--model-path",
        action="append",
        default=[],
        metavar="DIR",
        help="also measure this Hugging Face model folder (real weights; repeatable)",
    )
    parser.add_argument("--tasks", type=int, default=2, metavar="N", help="groups (default 2)")
    parser.add_argument(
        "--length", type=int, default=1024, metavar="N", help="tokens per sample (default 1024)"
    )
    parser.add_argument("--repeat", type=int, default=5, metavar="N", help="timed steps per mode")
    parser.add_argument("--warmup", type=int, default=1, metavar="N", help="untimed steps per mode")
    parser.add_argument(
        "--micro-batch-tokens", type=int, default=4096, metavar="N", help="(default 4096)"
    )
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:1, auto")
    parser.add_argument(
        "--dtype",
        choices=("auto", "fp32", "bf16"),
        default="auto",
        help="compute precision (auto: bf16 on a CUDA device with bf16, else fp32)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny model, 2 repeats: a smoke run")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args(argv)
    if args.quick:
        args.models, args.repeat, args.length = "tiny", 2, 256
    args.models = ",".join(m for m in args.models.split(",") if m)
    unknown = [m for m in args.models.split(",") if m and m not in MODELS]
    if not args.models and not args.model_path:
        parser.error("nothing to measure: give --models or --model-path")
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)} (known: {', '.join(MODELS)})")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(list(argv))
    try:
        import torch
        import transformers
    except ImportError as error:
        print(f"sprout bench learner: {error.name} is not installed (the train extra)")
        return 2
    transformers.logging.disable_progress_bar()
    from sprout.train.batching import LearnerError

    started = time.monotonic()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {message}", file=sys.stderr, flush=True)

    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="sprout-bench-learner-") as folder:
            for kind in filter(None, args.models.split(",")):
                path = build_model(kind, Path(folder))
                results.append(bench_model(kind, path, args, log))
            for given in args.model_path:
                results.append(bench_model(Path(given).name, Path(given), args, log))
    except LearnerError as error:
        print(f"sprout bench learner: {error}", file=sys.stderr)
        return 2
    facts = stats.machine_facts(tempfile.gettempdir())
    device = results[0]["device"]
    report = {
        "benchmark": "learner",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": shlex.join(sys.argv),
        "benchmark_argv": list(argv),
        "machine": {k: v for k, v in facts.items() if not k.startswith("store")},
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "torch_threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name(device) if device.startswith("cuda") else None,
        "batch": {
            "tasks": args.tasks,
            "roots_per_task": 2,
            "children_per_root": 3,
            "tokens_per_sample": args.length,
            "micro_batch_tokens": args.micro_batch_tokens,
            "seed": args.seed,
        },
        "repeat": args.repeat,
        "warmup": args.warmup,
        "elapsed_s": round(time.monotonic() - started, 1),
        "results": results,
    }
    out = stats.write_json(args.out, report)
    where = report["gpu"] or f"{facts['cpus']} CPUs ({facts['cpu_model']})"
    print(
        f"sprout bench learner — {report['date']}, {where}, torch {torch.__version__}, "
        f"{args.tasks} tasks x 2 roots x 3 children, {args.length} tokens per sample, "
        f"{report['elapsed_s']:.0f} s"
    )
    print(table(results, args.markdown))
    print(f"results: {out}")
    return 0
