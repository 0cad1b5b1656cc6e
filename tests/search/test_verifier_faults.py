"""A verifier that gives no verdict is an error, never the model failing the tests.

Each fault is made on purpose on a task whose reference solution is right: a reward file
that holds no number, no reward file where the task reads one, no report of the per-test
format the task names. The attempt ends `error` with fault `verifier` and no reward: not a
failure of any method (Pass@1 leaves it out, `failed` does not count it), never branched
from, and `--resume` verifies it again as its turns ended, playing none of them again.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.tree import RolloutTree
from tests.support.old_databases import database_at_version
from tests.support.requirements import require_host_image
from tests.support.taskfolders import TWO_EDITS_TEST, two_edits_task

FAULTS = {
    "nonsense-reward": ("echo maybe > /logs/verifier/reward.txt\n", ""),
    "no-reward-file": ("echo the runner wrote nothing\n", 'results = "reward"\n'),
    "no-junit": ("exit 0\n", 'results = "junit"\n'),
}
"""Fault -> (the verifier's test.sh, what task.toml's [sprout] table adds)."""


def faulty_tasks(root: Path, fault: str) -> Path:
    """A good task and one whose verifier has `fault`, both solved by their oracle."""
    two_edits_task(root, "good")
    bad = two_edits_task(root, "bad-verifier")
    test_sh, results = FAULTS[fault]
    (bad / "tests" / "test.sh").write_text(test_sh)
    toml = bad / "task.toml"
    toml.write_text(toml.read_text().replace("[sprout]\n", f"[sprout]\n{results}"))
    return bad


def attempts_of(out: Path, task: str) -> list[sqlite3.Row]:
    with sqlite3.connect(out / "sprout.db") as connection:
        connection.row_factory = sqlite3.Row
        return connection.execute(
            "SELECT * FROM attempts WHERE task_id = ? ORDER BY id", (task,)
        ).fetchall()


@pytest.mark.sandbox
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_verifier_without_a_verdict_ends_the_attempt_error(
    tmp_path: Path, fault: str, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    faulty_tasks(tmp_path / "tasks", fault)
    out = tmp_path / "run"
    args = ["run", str(tmp_path / "tasks"), "--model", "oracle", "--method", "pass@1"]
    assert main([*args, "--out", str(out)]) == 1
    printed = capsys.readouterr()
    said = printed.out + printed.err
    content = json.loads((out / "results.json").read_text())
    summary = content["methods"]["pass@1"]
    assert (summary["resolved"], summary["failed"], summary["errors"]) == (1, 0, 1)
    assert summary["pass_at_1"] == 1.0  # the good root alone: an error is no reward of 0
    assert summary["faults"] == {"verifier": 1}
    bad = content["tasks"]["bad-verifier"]["pass@1"]
    assert bad["resolved"] is False and bad["faults"] == {"verifier": 1} and "error" in bad
    (attempt,) = attempts_of(out, "bad-verifier")
    assert (attempt["status"], attempt["fault"], attempt["reward"]) == ("error", "verifier", None)
    assert attempt["end_reason"].startswith("verifier: ")
    assert json.loads(attempt["played"])["status"] == "submitted"
    assert "root #1: ERROR (verifier): verifier: task bad-verifier: " in said
    assert "1 of 2 tasks ended in error (attempts: 1 verifier)" in said


@pytest.mark.sandbox
def test_sprout_never_branches_from_a_verifier_error(tmp_path: Path) -> None:
    require_host_image()
    faulty_tasks(tmp_path / "tasks", "no-junit")
    out = tmp_path / "run"
    tasks = tmp_path / "tasks" / "bad-verifier"
    args = ["run", str(tasks), "--model", "oracle", "--method", "sprout", "--out", str(out)]
    assert main(args) == 1
    assert [a["kind"] for a in attempts_of(out, "bad-verifier")] == ["root"]
    with sqlite3.connect(out / "sprout.db") as connection:
        assert connection.execute("SELECT count(*) FROM analyses").fetchone() == (0,)
        roles = connection.execute("SELECT DISTINCT role FROM model_calls").fetchall()
    assert roles == [("actor",)]


@pytest.mark.sandbox
def test_resume_verifies_again_and_plays_no_turn_again(tmp_path: Path) -> None:
    require_host_image()
    bad = faulty_tasks(tmp_path / "tasks", "no-reward-file")
    out = tmp_path / "run"
    args = ["run", str(bad), "--model", "oracle", "--method", "pass@1", "--out", str(out)]
    assert main(args) == 1
    (before,) = attempts_of(out, "bad-verifier")
    with sqlite3.connect(out / "sprout.db") as connection:
        turns, calls = connection.execute(
            "SELECT (SELECT count(*) FROM turns), (SELECT count(*) FROM model_calls)"
        ).fetchone()
    (bad / "tests" / "test.sh").write_text(TWO_EDITS_TEST)  # the verifier mended
    assert main([*args, "--resume"]) == 0
    (after,) = attempts_of(out, "bad-verifier")
    assert after["id"] == before["id"]
    assert (after["status"], after["fault"], after["reward"]) == ("submitted", None, 1.0)
    assert after["end_reason"] == json.loads(before["played"])["reason"]
    with sqlite3.connect(out / "sprout.db") as connection:
        assert connection.execute(
            "SELECT (SELECT count(*) FROM turns), (SELECT count(*) FROM model_calls)"
        ).fetchone() == (turns, calls)
    content = json.loads((out / "results.json").read_text())
    assert content["methods"]["pass@1"]["resolved"] == 1
    assert content["methods"]["pass@1"]["errors"] == 0


def test_a_run_stored_with_a_verifier_failure_as_a_zero_opens_with_it_as_an_error(tmp_path):
    """Runs of earlier versions scored a verifier that did not run 0; opened now, that
    attempt is the error it was, and --resume verifies it again."""
    path = tmp_path / "sprout.db"
    diagnostics = {"reward": 0.0, "source": "verifier-error", "summary": "the verifier failed: x"}
    with database_at_version(path, 6) as db:  # before migration 7
        db.execute("INSERT INTO tasks VALUES ('t', '{}', 0)")
        for status, shown in (("submitted", diagnostics), ("limit", {"source": "junit"})):
            db.execute(
                "INSERT INTO attempts (task_id, boundary, kind, round, method, guided, prefix, "
                "status, end_reason, reward, diagnostics, created) "
                "VALUES ('t', 0, 'root', 0, 'pass@1', 0, '[]', ?, 'ended', 0.0, ?, 0)",
                (status, json.dumps(shown)),
            )
    tree = RolloutTree(path)
    errored, failed = tree.attempts("t")
    assert (errored.status, errored.fault, errored.reward) == ("error", "verifier", None)
    assert errored.end_reason == "verifier: x"
    assert errored.played is not None and errored.played.status == "submitted"
    assert (failed.status, failed.fault, failed.reward) == ("limit", None, 0.0)
    assert tree.reopen_attempts("t", "pass@1", ["verifier"]) == 1
    again = tree.attempts("t")[0]
    assert (again.status, again.end_reason, again.played) == ("submitted", "ended", None)
