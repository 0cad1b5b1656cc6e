"""Records as rows and back: plain JSON columns, never pickles, so a database written by
one version of sprout is read by the next."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from typing import Any

from sprout.tree.records import Attempt, CallRecord, ModelCallRecord, Played, Turn
from sprout.workspace import Change


def attempt_from_row(row: sqlite3.Row) -> Attempt:
    return Attempt(
        id=row["id"],
        task_id=row["task_id"],
        parent_id=row["parent_id"],
        boundary=row["boundary"],
        kind=row["kind"],
        status=row["status"],
        end_reason=row["end_reason"],
        fault=row["fault"],
        played=Played(**json.loads(row["played"])) if row["played"] else None,
        round=row["round"],
        method=row["method"],
        guided=bool(row["guided"]),
        starting_turn=row["starting_turn"],
        prefix=tuple(json.loads(row["prefix"])),
        base_checkpoint=row["base_checkpoint"],
        restarts=row["restarts"],
        reward=row["reward"],
        diagnostics=json.loads(row["diagnostics"]) if row["diagnostics"] else None,
        patch=row["patch"],
        created=row["created"],
    )


def turn_from_row(row: sqlite3.Row) -> Turn:
    return Turn(
        attempt_id=row["attempt_id"],
        index=row["idx"],
        author=row["author"],
        text=row["text"],
        calls=tuple(CallRecord(**call) for call in json.loads(row["calls"])),
        messages=tuple(json.loads(row["messages"])),
        checkpoint=row["checkpoint"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        cached_tokens=row["cached_tokens"],
        estimated=bool(row["estimated"]),
        entropy=row["entropy"],
        duration_s=row["duration_s"],
        format_error=bool(row["format_error"]),
        context_ids=tuple_or_none(row["context_ids"]),
        completion_ids=tuple_or_none(row["completion_ids"]),
        completion_logprobs=tuple_or_none(row["completion_logprobs"]),
        changes=changes_from_json(row["changes"]),
    )


def model_call_from_row(row: sqlite3.Row) -> ModelCallRecord:
    return ModelCallRecord(
        role=row["role"],
        task_id=row["task_id"],
        attempt_id=row["attempt_id"],
        turn_index=row["turn_idx"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        cached_tokens=row["cached_tokens"],
        estimated=bool(row["estimated"]),
        latency_s=row["latency_s"],
        method=row["method"],
    )


def json_list(values: tuple[Any, ...] | None) -> str | None:
    return None if values is None else json.dumps(list(values))


def tuple_or_none(text: str | None) -> tuple[Any, ...] | None:
    return None if text is None else tuple(json.loads(text))


def json_changes(changes: tuple[Change, ...] | None) -> str | None:
    """A turn's changes as JSON: `[{"path": ..., "kind": ..., "size": ...}, ...]`."""
    return None if changes is None else json.dumps([dataclasses.asdict(c) for c in changes])


def changes_from_json(text: str | None) -> tuple[Change, ...] | None:
    return None if text is None else tuple(Change(**change) for change in json.loads(text))
