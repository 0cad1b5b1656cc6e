"""The run's SQLite database: schema version, plain-data rows, reopening, refusing what it
cannot read."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from sprout.tree import CallRecord, ModelCallRecord, RolloutTree, RunDatabaseError, Turn
from sprout.tree.database.schema import SCHEMA_VERSION
from tests.support.old_databases import database_at_version


def grow(tree: RolloutTree) -> tuple[int, int]:
    """A root with two turns and a guided branch with one; (root id, branch id)."""
    tree.add_task("t1", {"instruction": "Fix it.", "tests": ["a", "b"]})
    root = tree.root(
        "t1", [{"role": "system", "content": "sys"}], "base0", round=0, method="sprout"
    )
    for index in (1, 2):
        tree.commit_turn(
            Turn(
                attempt_id=root.id,
                index=index,
                author="actor",
                text=f"```bash\necho {index}\n```",
                calls=(CallRecord(f"echo {index}", f"{index}\n", 0, duration_s=0.01),),
                messages=(
                    {"role": "assistant", "content": f"```bash\necho {index}\n```"},
                    {"role": "user", "content": f"exit code 0\n{index} ✓"},
                ),
                checkpoint=f"layer{index}",
                prompt_tokens=100 * index,
                completion_tokens=index,
                cached_tokens=64 if index == 2 else None,
                entropy=0.25,
                duration_s=1.5,
            )
        )
        tree.record_call(ModelCallRecord("actor", "t1", root.id, index, 100 * index, index))
    tree.finish_attempt(root.id, "submitted", "turn 2 printed SPROUT_SUBMIT")
    tree.set_outcome(root.id, 0.0, {"failed": ["test_b"]}, "diff --git a b")
    branch = tree.branch(root, 1, starting_turn="```bash\nls\n```", round=1, method="sprout")
    tree.commit_turn(
        Turn(
            attempt_id=branch.id,
            index=2,
            author="reviewer",
            text="```bash\nls\n```",
            calls=(),
            messages=({"role": "assistant", "content": "```bash\nls\n```"},),
            checkpoint="layer3",
            format_error=True,
        )
    )
    return root.id, branch.id


def test_a_new_database_has_the_current_schema_version(tmp_path):
    RolloutTree(tmp_path / "sprout.db").close()
    with sqlite3.connect(tmp_path / "sprout.db") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_reopened_database_reads_what_was_written(tmp_path):
    first = RolloutTree(tmp_path / "sprout.db")
    root_id, branch_id = grow(first)
    attempts = first.attempts()
    turns = {a.id: first.own_turns(a) for a in attempts}
    calls = first.model_calls()
    first.close()

    second = RolloutTree(tmp_path / "sprout.db")
    assert second.attempts() == attempts
    assert {a.id: second.own_turns(a) for a in attempts} == turns
    assert second.model_calls() == calls
    assert second.task_spec("t1") == {"instruction": "Fix it.", "tests": ["a", "b"]}
    root = second.find_attempt(root_id)
    assert (root.status, root.end_reason, root.reward) == (
        "submitted",
        "turn 2 printed SPROUT_SUBMIT",
        0.0,
    )
    assert root.diagnostics == {"failed": ["test_b"]}
    branch = second.find_attempt(branch_id)
    assert (branch.parent_id, branch.boundary, branch.guided, branch.round) == (root_id, 1, True, 1)
    assert second.checkpoints() == {"base0", "layer1", "layer2", "layer3"}
    assert second.attempts(status="running") == [branch]
    # the tree reopened rebuilds the branch's context
    assert [m["content"] for m in second.messages(branch)] == [
        "sys",
        "```bash\necho 1\n```",
        "exit code 0\n1 ✓",
        "```bash\nls\n```",
    ]
    with sqlite3.connect(tmp_path / "sprout.db") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_rows_are_plain_json_not_pickles(tmp_path):
    tree = RolloutTree(tmp_path / "sprout.db")
    root_id, _ = grow(tree)
    tree.close()
    with sqlite3.connect(tmp_path / "sprout.db") as db:
        calls, messages = db.execute(
            "SELECT calls, messages FROM turns WHERE attempt_id = ? AND idx = 1", (root_id,)
        ).fetchone()
        prefix = db.execute("SELECT prefix FROM attempts WHERE id = ?", (root_id,)).fetchone()[0]
    assert json.loads(calls)[0]["command"] == "echo 1"
    assert json.loads(messages)[1]["content"] == "exit code 0\n1 ✓"
    assert json.loads(prefix) == [{"role": "system", "content": "sys"}]


def test_a_turn_is_committed_once(tmp_path):
    tree = RolloutTree(tmp_path / "sprout.db")
    root_id, _ = grow(tree)
    again = tree.own_turns(tree.attempt(root_id))[0]
    with pytest.raises(sqlite3.IntegrityError):
        tree.commit_turn(again)
    assert len(tree.own_turns(tree.attempt(root_id))) == 2


def test_a_newer_schema_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "sprout.db"
    RolloutTree(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(RunDatabaseError) as raised:
        RolloutTree(path)
    assert str(path) in str(raised.value)
    assert str(SCHEMA_VERSION + 1) in str(raised.value)
    # and it was left as it was
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1


def not_sqlite(path):
    path.write_bytes(b"these are results, not SQLite\n" * 200)


def another_apps_database(path):
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE tasks (name TEXT, done INTEGER)")


@pytest.mark.parametrize("make", [not_sqlite, another_apps_database])
def test_a_file_that_is_not_a_sprout_database_is_a_database_error_naming_it(tmp_path, make):
    """RunDatabaseError: "The database file cannot be used (newer schema, not a sprout run
    database)"."""
    path = tmp_path / "sprout.db"
    make(path)
    with pytest.raises(RunDatabaseError) as raised:
        RolloutTree(path)
    assert str(path) in str(raised.value)


def test_turns_stored_before_their_changes_were_recorded_read_as_unknown(tmp_path):
    """Migration 5 adds `turns.changes`; the turns already there have none (None, not an
    empty tuple: the tree then reads them from the layers, see RolloutTree.changes)."""
    path = tmp_path / "sprout.db"
    database_at_version(path, 4).close()
    tree = RolloutTree(path)
    root_id, _ = grow(tree)
    tree.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE turns SET changes = NULL WHERE idx = 1")
        db.execute("UPDATE turns SET changes = '[]' WHERE idx = 2")
    tree = RolloutTree(path)
    assert [t.changes for t in tree.own_turns(tree.attempt(root_id))] == [None, ()]
    assert tree.version == SCHEMA_VERSION


def test_sprouts_own_crash_stored_as_harness_reads_as_sprout(tmp_path):
    """Migration 8 renames the fault of sprout's own crash: `harness` before, `sprout` now."""
    path = tmp_path / "sprout.db"
    with closing(RolloutTree(path)) as tree:
        root_id, branch_id = grow(tree)
    with sqlite3.connect(path) as db:  # as the sprout before migration 8 left it
        db.execute("PRAGMA user_version = 7")
        db.execute(
            "UPDATE attempts SET status = 'error', fault = 'harness' WHERE id = ?", (root_id,)
        )
        db.execute(
            "UPDATE attempts SET status = 'error', fault = 'model' WHERE id = ?", (branch_id,)
        )
    tree = RolloutTree(path)
    assert [(a.status, a.fault) for a in tree.attempts()] == [
        ("error", "sprout"),
        ("error", "model"),
    ]
    tree.close()
