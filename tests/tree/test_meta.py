"""The run's typed meta: read whole, written a field at a time, and read alike from a run
folder that an earlier sprout wrote (a `meta` row per key, its value as JSON)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from sprout.tree import (
    Concurrency,
    ImportedAttempt,
    Placement,
    RayPlacements,
    RebuiltCheckpoint,
    RolloutTree,
    RunMeta,
    TokenizerFingerprint,
)
from tests.support.old_databases import database_at_version

OLD_ROWS = {
    "settings": {"model": "oracle", "methods": [{"name": "sprout"}]},
    "isolation": {"holds": True, "jail": "user namespaces"},
    "task_warnings": {"t1": ["RUN --mount skipped"]},
    "images": {"t1": {"how": "pulled", "digest": "sha256:ab"}},
    "concurrency": {"workers": 4, "basis": "--workers 4", "peak": 3},
    "ray": {
        "address": "auto",
        "placements": [
            {
                "task": "t1",
                "node": "n1",
                "store": "/s/n1",
                "since": 1.5,
                "why": "placed",
                "cpus": 1.0,
                "memory": 2048,
            }
        ],
    },
    "train": {"steps": 3},
    "tokenizer": {
        "server": "vLLM",
        "base_url": "http://x",
        "model": "m",
        "probe_sha256": "ff",
        "end_of_turn": 7,
    },
    "rebuilt": [
        {"attempt": 2, "checkpoint": "c2", "calls": 3, "differed": 0, "diverged": None, "at": 9.0}
    ],
    "imported": [{"attempt": 1, "task": "t1", "source": "t1.traj.json"}],
    "from_a_newer_sprout": {"anything": 1},
}
"""A run's meta as sprout wrote it before it was typed, and a key it never knew."""


def old_run(path: Path) -> Path:
    """A `sprout.db` as the schema before the typed meta left it, its meta rows written the
    way that sprout wrote them (`INSERT OR REPLACE`, the value as JSON)."""
    with database_at_version(path, 7) as db:
        for key, value in OLD_ROWS.items():
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value))
            )
    db.close()
    return path


def test_an_old_runs_meta_reads_typed_and_the_same(tmp_path: Path):
    tree = RolloutTree(old_run(tmp_path / "sprout.db"))
    meta = tree.meta()
    assert meta.settings == OLD_ROWS["settings"]
    assert meta.isolation == OLD_ROWS["isolation"]
    assert meta.task_warnings == OLD_ROWS["task_warnings"]
    assert meta.images == OLD_ROWS["images"]
    assert meta.train == OLD_ROWS["train"]
    assert meta.concurrency == Concurrency(workers=4, basis="--workers 4", peak=3)
    assert meta.ray is not None and meta.ray.address == "auto"
    assert meta.ray.placements[0].store == "/s/n1" and meta.ray.placements[0].memory == 2048
    assert meta.tokenizer is not None and meta.tokenizer.server == "vLLM"
    assert meta.rebuilt == [RebuiltCheckpoint.model_validate(OLD_ROWS["rebuilt"][0])]
    assert meta.imported == [ImportedAttempt(attempt=1, task="t1", source="t1.traj.json")]
    # each record reads back as it was written, keys this version does not name included
    assert meta.tokenizer.to_json() == OLD_ROWS["tokenizer"]
    assert meta.ray.to_json() == OLD_ROWS["ray"]
    assert [r.to_json() for r in meta.rebuilt] == OLD_ROWS["rebuilt"]
    tree.close()


def test_a_field_is_written_alone_and_other_rows_are_left_alone(tmp_path: Path):
    path = old_run(tmp_path / "sprout.db")
    tree = RolloutTree(path)
    placed = Placement(task="t2", node="n2", store="/s/n2")
    tree.update_meta(RunMeta(ray=RayPlacements(address="auto", placements=[placed])))
    tree.close()
    with sqlite3.connect(path) as db:
        rows = dict(db.execute("SELECT key, value FROM meta").fetchall())
    assert json.loads(rows["ray"]) == {
        "address": "auto",
        "placements": [{"task": "t2", "node": "n2", "store": "/s/n2"}],
    }
    assert json.loads(rows["from_a_newer_sprout"]) == {"anything": 1}
    assert json.loads(rows["settings"]) == OLD_ROWS["settings"]


def test_a_new_runs_meta_is_empty_until_recorded(tmp_path: Path):
    tree = RolloutTree(tmp_path / "sprout.db")
    assert tree.meta() == RunMeta()
    fingerprint = {"sha256": "ab", "model": "hf/m", "eos_token_id": None}
    tree.update_meta(RunMeta(tokenizer=TokenizerFingerprint.model_validate(fingerprint)))
    tokenizer = tree.meta().tokenizer
    assert tokenizer is not None and tokenizer.to_json() == fingerprint
    assert tree.meta().rebuilt == [] and tree.meta().settings is None
    tree.close()
