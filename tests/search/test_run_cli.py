"""`sprout run` as a user runs it: the table, results.json's shape, bad input, resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.sandbox import LayerStore, Sandbox
from sprout.tasks import load_native
from sprout.tasksandbox.room import this_machine
from sprout.tree import referenced_checkpoints
from tests.support.held_flush import HeldFlush
from tests.support.processes import ProcessWatch
from tests.support.requirements import require_host_image
from tests.support.run_decisions import decisions
from tests.support.run_watch import release, wait_for_rows, wait_until
from tests.support.taskfolders import TRAPPED, TWO_EDITS_SOLVE, two_edits_task

METHOD_KEYS = {
    "tasks",
    "resolved",
    "resolve_rate",
    "pass_at_1",
    "tokens",
    "attempts",
    "turns_executed",
    "turns_imported",
    "turns_reused",
    "wall_s",
    "failed",
    "errors",
    "incomplete",
    "faults",
    "role_sources",
}


def test_run_prints_the_table_and_writes_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    two_edits_task(tasks, "first")
    two_edits_task(tasks, "second")
    out = tmp_path / "run"
    code = main(
        [
            "run",
            str(tasks),
            "--model",
            TRAPPED,
            "--method",
            "pass@2,sprout",
            "--out",
            str(out),
            "--workers",
            "2",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "method" in printed and "pass@2" in printed and "sprout" in printed
    assert "estimated" in printed
    content = json.loads((out / "results.json").read_text())
    assert set(content["methods"]) == {"pass@2", "sprout"}
    for summary in content["methods"].values():
        assert set(summary) == METHOD_KEYS
        assert set(summary["tokens"]) == {"spent", "prefix_once", "estimated"}
        assert summary["tasks"] == 2
    assert content["methods"]["sprout"]["resolved"] == 2
    assert content["methods"]["pass@2"]["resolved"] == 0
    assert set(content["tasks"]) == {"first", "second"}
    for by_method in content["tasks"].values():
        for result in by_method.values():
            assert set(result) == {"resolved", "tokens", "attempts"}
    assert (out / "sprout.db").is_file() and (out / "layers").is_dir()
    at_once = content["concurrency"]
    assert (at_once["workers"], at_once["basis"]) == (2, "--workers 2")
    assert 1 <= at_once["peak"] <= 2, "measured, and never above the limit"
    assert (
        f"at once: {at_once['peak']} sandboxes at the most, of 2 allowed (--workers 2)" in printed
    )
    assert printed.splitlines()[0].endswith("4 (task, method) pairs, 2 at once: --workers 2")


def test_workers_auto_fills_this_machines_room(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    task = two_edits_task(tmp_path / "tasks")
    out = tmp_path / "run"
    args = ["run", str(tmp_path / "tasks"), "--model", "oracle", "--method", "pass@1"]
    assert main([*args, "--out", str(out), "--workers", "auto"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    at_once = json.loads((out / "results.json").read_text())["concurrency"]
    room = this_machine([load_native(task)])
    assert (at_once["workers"], at_once["basis"]) == (room.attempts, room.basis)
    assert room.basis.startswith("this machine's room: ")
    assert header.endswith(f"1 (task, method) pairs, {room.attempts} at once: {room.basis}")
    assert at_once["peak"] == 1, "one pair of one root"


def test_an_existing_run_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    two_edits_task(tmp_path / "tasks")
    out = tmp_path / "run"
    args = ["run", str(tmp_path / "tasks"), "--model", "oracle", "--method", "pass@1"]
    assert main([*args, "--out", str(out)]) == 0
    before = (out / "sprout.db").read_bytes()
    assert main([*args, "--out", str(out)]) == 2
    assert "pass --resume" in capsys.readouterr().err
    assert main([*args, "--out", str(out), "--model", "oracle-noise", "--resume"]) == 2
    assert "different settings (model" in capsys.readouterr().err
    assert (out / "sprout.db").read_bytes() == before
    assert main([*args, "--out", str(out), "--resume"]) == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "best-of-3"], "expected pass@K, pass@K-first, sprout, entropy or shepherd"),
        (["--method", "entropy"], "needs per-token log-probabilities"),
        (["--model", "gpt-4"], "expected one of openai/<name>"),
        (["--workers", "0"], "--workers: expected at least 1"),
        (["--workers", "all"], "--workers all: expected a number or auto"),
        (["--rounds", "4,x"], "--rounds '4,x'"),
        (["--config", "/nonexistent/actor.toml"], "--config /nonexistent/actor.toml"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    two_edits_task(tmp_path / "tasks")
    args = ["run", str(tmp_path / "tasks"), "--model", "oracle", "--out", str(tmp_path / "run")]
    assert main([*args, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run" / "sprout.db").exists()


def test_a_broken_task_is_named_and_the_others_still_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    two_edits_task(tasks, "good")
    broken = two_edits_task(tasks, "broken")
    (broken / "task.toml").write_text("[sprout]\nnetwork = 'sometimes'\n")
    out = tmp_path / "run"
    code = main(["run", str(tasks), "--model", "oracle", "--method", "pass@1", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2
    assert "broken:" in captured.err and "sprout.network" in captured.err
    content = json.loads((out / "results.json").read_text())
    assert set(content["tasks"]) == {"good"} and content["methods"]["pass@1"]["resolved"] == 1


def test_a_failing_setup_is_recorded_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    two_edits_task(tasks, "good")
    bad = two_edits_task(tasks, "bad-setup")
    (bad / "task.toml").write_text('[sprout]\nimage = "host"\nsetup = ["exit 3"]\n')
    out = tmp_path / "run"
    code = main(["run", str(tasks), "--model", "oracle", "--method", "pass@1", "--out", str(out)])
    assert code == 1
    content = json.loads((out / "results.json").read_text())
    assert "exit code 3" in content["tasks"]["bad-setup"]["pass@1"]["error"]
    assert content["tasks"]["good"]["pass@1"]["resolved"] is True
    assert "bad-setup  pass@1  ERROR" in capsys.readouterr().out


def _turn_rows(db: Path) -> set[tuple[int, int, float]]:
    with sqlite3.connect(db) as connection:
        return set(connection.execute("SELECT attempt_id, idx, created FROM turns"))


def test_a_killed_run_resumes_without_redoing_a_finished_turn(
    tmp_path: Path, procs: ProcessWatch, marker: str
) -> None:
    require_host_image()
    task = two_edits_task(tmp_path / "tasks")
    solve = task / "solution" / "solve.sh"
    # Step 2 sleeps first: roots fall into its trap and never run it; the branch whose
    # starting turn names b.txt runs it and sleeps there until the test kills the run.
    solve.write_text(
        TWO_EDITS_SOLVE.replace("echo 2 > b.txt\n", f"sleep {marker}\necho 2 > b.txt\n")
    )
    out = tmp_path / "run"
    args = [
        sys.executable,
        "-m",
        "sprout.cli",
        "run",
        str(tmp_path / "tasks"),
        "--model",
        TRAPPED,
        "--method",
        "sprout",
        "--rounds",
        "2",
        "--out",
        str(out),
    ]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, start_new_session=True)
    db = out / "sprout.db"
    try:
        branch_turns = "SELECT count(*) FROM turns JOIN attempts ON attempts.id = attempt_id "
        wait_for_rows(process, db, branch_turns + "WHERE kind = 'branch'", 1, "a branch's turn")
        wait_until(lambda: procs.matching(marker), process, "the branch's step 2")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    before = _turn_rows(db)
    assert not (out / "results.json").exists(), "killed mid-schedule: no schedule ended yet"

    with open(tmp_path / "resumed.err", "w") as errors:
        resumed = subprocess.Popen([*args, "--resume"], stdout=subprocess.DEVNULL, stderr=errors)
    release(procs, marker, resumed)  # the branch plays step 2 again: its sleep ends at once
    assert resumed.wait(timeout=120) == 0, (tmp_path / "resumed.err").read_text()
    after = _turn_rows(db)
    assert before <= after, "every turn committed before the kill is kept as it was"
    content = json.loads((out / "results.json").read_text())
    assert content["methods"]["sprout"]["resolved"] == 1
    with sqlite3.connect(db) as connection:
        rounds = {row[0] for row in connection.execute("SELECT round FROM attempts")}
        reviews = connection.execute("SELECT count(*) FROM reviews").fetchone()[0]
    assert rounds <= {0, 1} and reviews == 1, "the resumed run reused the stored review"


def _holds_run(out: Path) -> bool:
    """Whether the run in `out` saved anything (as `RolloutTree.holds_run` reads it)."""
    if not (out / "sprout.db").exists():
        return False
    with sqlite3.connect(out / "sprout.db") as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
        return any(
            connection.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None
            for table in ("meta", "tasks", "attempts")
            if table in tables
        )


def _noisy_run_started_straight(tmp_path: Path) -> list[str]:
    """The command of a run of a slow two-edit task with a noisy oracle, once it has run
    uninterrupted to tmp_path/straight (what a killed and resumed run must decide alike)."""
    require_host_image()
    two_edits_task(tmp_path / "tasks", slow_step=0.15)
    model = "oracle-noise:p=0.4,seed=5"
    base = [sys.executable, "-m", "sprout.cli", "run", str(tmp_path / "tasks"), "--model", model]
    base += ["--method", "pass@2,sprout", "--workers", "1", "--quiet"]
    straight = subprocess.run([*base, "--out", str(tmp_path / "straight")], capture_output=True)
    assert straight.returncode == 0, straight.stderr
    return base


@pytest.mark.slow
def test_a_run_killed_at_random_instants_decides_as_an_uninterrupted_run(tmp_path: Path) -> None:
    """oracle-noise draws by the place of each turn in the tree, never by a counter kept in
    memory: a run killed and resumed again and again ends with the same tree."""
    base = _noisy_run_started_straight(tmp_path)
    out = tmp_path / "killed"
    kills = 0
    for instant in (1.2, 0.7, 1.9, 0.4, 1.3, 0.9, 2.5, 3.5):
        # a kill before the run saved anything leaves a sprout.db that holds no run, which
        # --resume refuses (tests/test_runfolder.py): that start is made again, as a new run
        resume = ["--resume"] if _holds_run(out) else []
        process = subprocess.Popen(
            [*base, "--out", str(out), *resume],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            _, errors = process.communicate(timeout=instant)
            assert process.returncode == 0, errors
            break
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            kills += 1
    else:
        final = subprocess.run([*base, "--out", str(out), "--resume"], capture_output=True)
        assert final.returncode == 0, final.stderr
    assert kills >= 2, "the run finished before it could be killed twice"
    assert decisions(out) == decisions(tmp_path / "straight")


@pytest.mark.slow
def test_a_run_killed_before_a_checkpoints_flush_recorded_only_checkpoints_on_disk(
    tmp_path: Path,
) -> None:
    """A kill -9 while a sealed checkpoint's flush is held (a crash of the machine would lose
    that checkpoint): sprout.db names only checkpoints that reached the disk, each of them
    opens, and --resume ends as the same run uninterrupted does."""
    base = _noisy_run_started_straight(tmp_path)
    flush = HeldFlush(tmp_path / "hook")
    out = tmp_path / "killed"
    with open(tmp_path / "killed.err", "w") as errors:
        process = subprocess.Popen(
            [*base, "--out", str(out)],
            env=flush.env(),
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
        )
    try:
        wait_for_rows(process, out / "sprout.db", "SELECT count(*) FROM turns", 1, "a turn")
        flush.hold()
        held = wait_until(flush.held, process, "a checkpoint's flush held")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    recorded, flushed = referenced_checkpoints(out / "sprout.db"), flush.flushed()
    assert recorded, (tmp_path / "killed.err").read_text()
    assert held - flushed, "killed with a checkpoint sealed and its flush held"
    assert recorded <= flushed, "sprout.db names a checkpoint that never reached the disk"
    layers = LayerStore(out / "layers")
    for checkpoint in recorded:
        with Sandbox.fork(layers, checkpoint) as sandbox:
            assert sandbox.run("true").exit_code == 0, checkpoint
    resumed = subprocess.run([*base, "--out", str(out), "--resume"], capture_output=True)
    assert resumed.returncode == 0, resumed.stderr
    assert decisions(out) == decisions(tmp_path / "straight")


def test_a_verifier_that_hangs_scores_zero_and_the_run_goes_on(tmp_path: Path) -> None:
    """A verifier that times out gives the verdict a timeout is (Harbor's too): 0."""
    require_host_image()
    tasks = tmp_path / "tasks"
    two_edits_task(tasks, "good")
    bad = two_edits_task(tasks, "bad-verifier")
    (bad / "tests" / "test.sh").write_text("sleep 30\n")
    (bad / "task.toml").write_text(
        (bad / "task.toml").read_text().replace("timeout_sec = 30", "timeout_sec = 1")
    )
    out = tmp_path / "run"
    code = main(["run", str(tasks), "--model", "oracle", "--method", "pass@1", "--out", str(out)])
    assert code == 0
    content = json.loads((out / "results.json").read_text())
    assert content["tasks"]["good"]["pass@1"]["resolved"] is True
    assert content["tasks"]["bad-verifier"]["pass@1"]["resolved"] is False
    with sqlite3.connect(out / "sprout.db") as connection:
        (diagnostics,) = connection.execute(
            "SELECT diagnostics FROM attempts WHERE task_id = 'bad-verifier'"
        ).fetchone()
    assert "timed out" in json.loads(diagnostics)["summary"]


def test_a_broken_roles_table_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two_edits_task(tmp_path / "tasks")
    config = tmp_path / "settings.toml"
    config.write_text('[roles]\nmax_retries = 1\nreviewer_template = "{% if %}"\n')
    out = tmp_path / "run"
    args = ["run", str(tmp_path / "tasks"), "--model", "oracle", "--out", str(out)]
    assert main([*args, "--config", str(config)]) == 2
    assert "roles.reviewer_template" in capsys.readouterr().err
    assert not out.exists()
