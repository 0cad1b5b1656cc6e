"""The run folder as `sprout run`, `train` and `tasks check` open it: one line and exit 2 for
an `--out` or a `sprout.db` that cannot be used, nothing saved lost, and the debris of
killed runs swept at the next start."""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.runfolder import RunFolder, RunFolderError
from sprout.tree import RunDatabaseError, RunMeta
from tests.support.taskfolders import two_edits_task


def error_lines(err: str) -> list[str]:
    """stderr without the warnings a command prints before it opens the folder."""
    return [line for line in err.splitlines() if line and "warning:" not in line]


def a_run(path: Path) -> Path:
    """A run folder that holds a run (its settings), as a killed `sprout run` leaves it."""
    run = RunFolder.create_new(path)
    run.tree.update_meta(RunMeta(settings={"model": "oracle"}))
    run.close()
    return path


def run_args(tmp_path: Path, out: Path, *extra: str) -> list[str]:
    if not (tmp_path / "tasks").exists():
        two_edits_task(tmp_path / "tasks")
    return [
        "run",
        str(tmp_path / "tasks"),
        "--model",
        "oracle",
        "--method",
        "pass@1",
        "--isolation",
        "none",
        "--out",
        str(out),
        *extra,
    ]


def rows(database: Path) -> list[tuple]:
    with sqlite3.connect(database) as connection:
        return connection.execute("SELECT key, value FROM meta ORDER BY key").fetchall()


@pytest.mark.parametrize("command", ["run", "tasks check", "train"])
def test_an_out_that_names_a_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    out = tmp_path / "results.txt"
    out.write_text("keep me\n")
    two_edits_task(tmp_path / "tasks")
    tasks = str(tmp_path / "tasks")
    where = ["--isolation", "none", "--out", str(out)]
    argv = {
        "run": run_args(tmp_path, out),
        "tasks check": ["tasks", "check", tasks, *where],
        "train": ["train", "--model", "hf/none", "--tasks", tasks, "--steps", "1", *where],
    }[command]
    assert main(argv) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and str(out) in lines[0] and "a file" in lines[0], lines
    assert out.read_text() == "keep me\n"


def test_resume_with_nothing_to_resume_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(run_args(tmp_path, out, "--resume")) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "nothing to resume (no sprout.db)" in lines[0], lines
    assert not out.exists(), "a refused resume creates nothing"
    out.mkdir()
    (out / "sprout.db").touch()  # a run killed before it saved anything
    assert main(run_args(tmp_path, out, "--resume")) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "sprout.db holds no run" in lines[0], lines


def test_a_sprout_db_that_holds_no_run_can_start_one(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "sprout.db").touch()
    RunFolder.create_new(out).close()
    a_run(tmp_path / "other")
    with pytest.raises(RunFolderError, match="already holds a run"):
        RunFolder.create_new(tmp_path / "other")


def test_a_folder_of_other_things_is_not_made_a_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "todo.txt").write_text("x")
    assert main(run_args(tmp_path, out)) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "not a run folder" in lines[0] and "todo.txt" in lines[0]
    assert os.listdir(out) == ["todo.txt"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda db: db.mkdir(), "a folder, not a SQLite file"),
        (lambda db: db.write_bytes(b"results, not SQLite\n" * 100), "not a sprout run database"),
    ],
)
def test_a_sprout_db_that_is_a_folder_or_not_sqlite_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make, message: str
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    make(out / "sprout.db")
    for extra in ([], ["--resume"]):
        assert main(run_args(tmp_path, out, *extra)) == 2
        lines = error_lines(capsys.readouterr().err)
        assert len(lines) == 1 and str(out / "sprout.db") in lines[0] and message in lines[0]
    assert main(["shell", str(out), "1:1"]) == 2


HOLD_WRITE = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO meta (key, value) VALUES ('intruder', '1')")
print("holding", flush=True)
time.sleep(60)
"""


def test_a_locked_sprout_db_names_the_file_and_the_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = a_run(tmp_path / "run")
    before = rows(out / "sprout.db")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITE, str(out / "sprout.db")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        assert main(run_args(tmp_path, out, "--resume")) == 2
    finally:
        holder.kill()
        holder.wait()
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1, lines
    assert str(out / "sprout.db") in lines[0] and "locked" in lines[0]
    assert f"process {holder.pid}" in lines[0]
    assert rows(out / "sprout.db") == before, "what was saved is all there"


HOLD_RUN = """
import sys, time
from sprout.runfolder import RunFolder
run = RunFolder.create(sys.argv[1])
print("writing", flush=True)
time.sleep(60)
"""


def test_a_second_writer_is_refused_at_once_naming_the_first(tmp_path: Path) -> None:
    out = a_run(tmp_path / "run")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_RUN, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "writing\n"
        with pytest.raises(RunFolderError, match=f"in use by process {holder.pid}"):
            RunFolder.resume(out)
        RunFolder.open(out).close()  # readers are welcome
    finally:
        holder.kill()
        holder.wait()
    RunFolder.resume(out).close()  # the lock died with its holder


def test_one_process_may_open_its_own_run_twice(tmp_path: Path) -> None:
    out = a_run(tmp_path / "run")
    first = RunFolder.resume(out)
    second = RunFolder.resume(out)
    second.close()
    first.tree.update_meta(RunMeta(images={"still": {}}))
    first.close()


@pytest.fixture
def read_only_folder(tmp_path: Path):
    """`tmp_path/ro`, made read-only with a read-only bind mount of itself (as root chmod
    stops no write), unmounted afterwards by its path."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root (chmod 0444 is the case for others)")
    folder = tmp_path / "ro"
    folder.mkdir()
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


def make_read_only(folder: Path) -> None:
    for argv in (["mount", "--bind", folder, folder], ["mount", "-o", "remount,bind,ro", folder]):
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot make a read-only bind mount here: {done.stderr.strip()}")


def test_a_read_only_sprout_db_is_one_line(
    tmp_path: Path, read_only_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = a_run(read_only_folder / "run")
    before = rows(out / "sprout.db")
    make_read_only(read_only_folder)
    assert main(run_args(tmp_path, out, "--resume")) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and str(out / "sprout.db") in lines[0] and "read-only" in lines[0]
    assert main(run_args(tmp_path, read_only_folder / "new")) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "cannot make the run folder" in lines[0], lines
    subprocess.run(["umount", str(read_only_folder)], check=True)
    assert rows(out / "sprout.db") == before


def test_a_store_error_mid_run_keeps_what_was_committed(tmp_path: Path) -> None:
    out = a_run(tmp_path / "run")
    run = RunFolder.resume(out)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITE, str(out / "sprout.db")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        with pytest.raises(RunDatabaseError, match="locked"):
            run.tree.update_meta(RunMeta(images={"late": {}}))
    finally:
        holder.kill()
        holder.wait()
    run.tree.update_meta(RunMeta(images={"after": {}}))  # usable again once the lock is gone
    run.close()
    assert [key for key, _ in rows(out / "sprout.db")] == ["images", "settings"]
    assert rows(out / "sprout.db")[0][1] == '{"after": {}}', "the locked write left nothing"


def test_the_next_start_sweeps_what_a_killed_run_left_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = a_run(tmp_path / "run")
    layers = out / "layers"
    dead = subprocess.Popen(["true"])
    dead.wait()
    layer_id = secrets.token_hex(5)  # a verifier's fork, killed with the hidden tests in it
    (layers / "h" / layer_id).write_text(json.dumps({"pid": dead.pid, "start": "1"}))
    (layers / "l" / layer_id / "tests").mkdir(parents=True)
    (layers / "l" / layer_id / "tests" / "test_hidden.py").write_text("assert secret\n" * 1000)
    (layers / "w" / layer_id / "w").mkdir(parents=True)
    run = RunFolder.resume(out)
    run.close()
    assert run.swept is not None and run.swept.debris == [layer_id]
    err = capsys.readouterr().err
    assert "swept 1 unsealed layer" in err and str(layers) in err
    assert os.listdir(layers / "l") == [] and os.listdir(layers / "w") == []
    assert os.listdir(layers / "h") == []
    RunFolder.resume(out).close()
    assert "swept" not in capsys.readouterr().err, "nothing to say the second time"
