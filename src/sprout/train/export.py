"""`sprout export`: a run's groups as JSON Lines records for verl, TRL, or sprout's own learner.

One record per sample, groups contiguous, in the vocabulary of the trainer
that reads it (docs/training.md shows the loading code for each):

- `jsonl`: the `Sample` itself, field for field.
- `verl`: an agent loop's output, field for field as verl's `AgentLoopOutput` reads it
  (`prompt_ids`, `response_ids`, `response_mask`, `reward_score`, `num_turns`,
  `metrics` with the seconds spent generating and in tool calls), with
  `response_logprobs` only when every response token has one (verl takes a list of
  floats or nothing); the group's `uid`, per-token `advantages` and the rest in
  `extra_fields`, which verl carries into its batch.
- `trl`: what a `GRPOTrainer` `rollout_func` returns (`prompt_ids`,
  `completion_ids`, `logprobs`, `env_mask`), with `reward`, `group_id` and
  `advantages`; every group must have the same size (TRL's `num_generations`).

The prompt is everything before the first trained token: the retained prefix
and the context the rollout was given; the response is the rest, observations
included and masked. Log-probs the rollout engine did not give (context tokens,
a reviewer-written starting turn) are null (`jsonl`, `trl`, and `verl`'s
`extra_fields`). Every record holds all a sample
holds, so `read_samples` gives back exactly the samples that were written.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from sprout.durable import write_atomically
from sprout.errors import SproutError
from sprout.train.samples import Sample

Format = Literal["jsonl", "verl", "trl"]
FORMATS: tuple[Format, ...] = ("jsonl", "verl", "trl")


class ExportError(SproutError, ValueError):
    """Samples a format cannot hold, a format sprout does not write, or a file that does not
    read back as the records of a format."""


def _split(sample: Sample) -> int:
    """The index of the first trained token: where the prompt ends and the response starts."""
    return next((i for i, mask in enumerate(sample.loss_mask) if mask), len(sample.input_ids))


def to_record(sample: Sample, fmt: Format) -> dict[str, Any]:
    """`sample` as one record of `fmt` (see the module docstring)."""
    if fmt == "jsonl":
        return {key: _plain(value) for key, value in dataclasses.asdict(sample).items()}
    cut = _split(sample)
    ids, mask, logprobs = sample.input_ids, sample.loss_mask, sample.rollout_logprobs
    identity = {
        "task_id": sample.task_id,
        "attempt_id": sample.attempt_id,
        "parent_id": sample.parent_id,
        "prefix_tokens": sample.prefix_tokens,
        "prompt_logprobs": list(logprobs[:cut]),
    }
    timing = {"turns": sample.turns, "generate_s": sample.generate_s, "tool_s": sample.tool_s}
    if fmt == "verl":
        record: dict[str, Any] = {
            "prompt_ids": list(ids[:cut]),
            "response_ids": list(ids[cut:]),
            "response_mask": list(mask[cut:]),
            "reward_score": sample.reward,
            "num_turns": sample.turns,
            "metrics": {"generate_sequences": sample.generate_s, "tool_calls": sample.tool_s},
            "extra_fields": {
                "uid": sample.group_id,
                "advantages": list(sample.advantages[cut:]),
                "response_logprobs": list(logprobs[cut:]),
                **identity,
            },
        }
        if all(lp is not None for lp in logprobs[cut:]):
            record["response_logprobs"] = list(logprobs[cut:])
        return record
    if fmt == "trl":
        return {
            "group_id": sample.group_id,
            "prompt_ids": list(ids[:cut]),
            "completion_ids": list(ids[cut:]),
            "logprobs": list(logprobs[cut:]),
            "env_mask": list(mask[cut:]),
            "reward": sample.reward,
            "advantages": list(sample.advantages[cut:]),
            **identity,
            **timing,
        }
    raise ExportError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")


def from_record(record: dict[str, Any], fmt: Format) -> Sample:
    """The sample a record of `fmt` was written from; ExportError names a missing field."""
    try:
        if fmt == "jsonl":
            return Sample(**{key: _tuple(value) for key, value in record.items()})
        if fmt == "verl":
            info = record["extra_fields"]
            prompt, response = record["prompt_ids"], record["response_ids"]
            mask, logprobs = record["response_mask"], info["response_logprobs"]
            group, reward, advantages = info["uid"], record["reward_score"], info["advantages"]
            turns, seconds = record["num_turns"], record["metrics"]
            timing = (seconds["generate_sequences"], seconds["tool_calls"])
        elif fmt == "trl":
            info = record
            prompt, response = record["prompt_ids"], record["completion_ids"]
            mask, logprobs = record["env_mask"], record["logprobs"]
            group, reward, advantages = record["group_id"], record["reward"], record["advantages"]
            turns, timing = record["turns"], (record["generate_s"], record["tool_s"])
        else:
            raise ExportError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
        return Sample(
            task_id=info["task_id"],
            group_id=group,
            attempt_id=info["attempt_id"],
            parent_id=info["parent_id"],
            reward=reward,
            input_ids=(*prompt, *response),
            loss_mask=(0,) * len(prompt) + tuple(mask),
            advantages=(0.0,) * len(prompt) + tuple(advantages),
            rollout_logprobs=(*info["prompt_logprobs"], *logprobs),
            prefix_tokens=info["prefix_tokens"],
            turns=turns,
            generate_s=timing[0],
            tool_s=timing[1],
        )
    except KeyError as error:
        raise ExportError(f"a {fmt} record without the field {error}") from None
    except TypeError as error:
        raise ExportError(f"not a {fmt} record ({error})") from None


def check_groups(samples: Sequence[Sample], fmt: Format) -> None:
    """TRL reads a group as `num_generations` consecutive completions: refuse groups of
    different sizes, naming them."""
    if fmt != "trl" or not samples:
        return
    sizes = Counter(sample.group_id for sample in samples)
    usual = sizes.most_common(1)[0][0]
    odd = {group: size for group, size in sizes.items() if size != sizes[usual]}
    if odd:
        named = ", ".join(f"{group} ({size})" for group, size in sorted(odd.items()))
        raise ExportError(
            f"--format trl: every group needs {sizes[usual]} samples, as {usual} has (TRL's "
            f"num_generations); these differ: {named}. Export one method (--method), or jsonl"
        )


def meta_path(export: str | Path) -> Path:
    """The sidecar `FILE.meta.json` beside an export: its format, sample count and the
    fingerprint of the tokenizer that made its ids (the records keep the shape their
    trainers read)."""
    export = Path(export)
    return export.with_name(export.name + ".meta.json")


def read_meta(export: str | Path) -> dict[str, Any] | None:
    """An export's sidecar, or None when it has none (written by hand, or by another tool)."""
    path = meta_path(export)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ExportError(f"{path}: not JSON ({error.msg})") from None
    return data if isinstance(data, dict) else None


def write_records(samples: Sequence[Sample], fmt: Format, out: str | Path) -> Path:
    """Write `samples` as `fmt` records to `out`, all or nothing (atomically replaced)."""
    check_groups(samples, fmt)
    lines = [json.dumps(to_record(sample, fmt), separators=(",", ":")) for sample in samples]
    path = Path(out).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(str(path), "".join(line + "\n" for line in lines), durable=True)
    return path


def read_samples(path: str | Path, fmt: Format) -> list[Sample]:
    """The samples an export of `fmt` holds, in file order."""
    samples = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ExportError(f"{path}:{number}: not a JSON record ({error.msg})") from None
            try:
                samples.append(from_record(record, fmt))
            except ExportError as error:
                raise ExportError(f"{path}:{number}: {error}") from None
    return samples


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
