"""`sprout tasks check` as a user runs it: the table, exit codes, load errors, --out."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from sprout.cli import main
from tests.support.processes import ProcessWatch
from tests.support.requirements import require_host_image
from tests.support.run_watch import release, wait_until
from tests.support.swebench_records import swebench_with_a_pipe_in_its_clone
from tests.support.taskfolders import CALC_SOLVE, CALC_TEST_SH, FIXED, calc_task, write_task


def check(*args: str) -> int:
    return main(["tasks", "check", *args])


def rows(printed: str) -> dict[str, str]:
    """The table's rows by task id."""
    return {line.split()[0]: line for line in printed.splitlines()[1:] if line.strip()}


@pytest.mark.sandbox
def test_a_sound_task_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_host_image()
    assert check(str(calc_task(tmp_path, "calc"))) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].split() == ["task", "untouched", "oracle", "seconds", "problem"]
    assert rows(printed)["calc"].split()[1:9] == [
        "fail",
        "(1",
        "of",
        "2",
        "tests)",
        "pass",
        "(2",
        "of",
    ]
    assert rows(printed)["calc"].endswith("  ok")
    assert "1 task: 1 ok, 0 broken" in printed


@pytest.mark.sandbox
def test_broken_tasks_exit_1_and_the_others_still_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    calc_task(tasks, "good")
    calc_task(tasks, "fixed", code=FIXED)
    calc_task(tasks, "wrong", solve=CALC_SOLVE.replace("a + b/", "a + b + 1/"))
    calc_task(tasks, "typo", toml="network = maybe\n")
    calc_task(tasks, "bare", solve=None)
    assert check(str(tasks), "--workers", "2") == 1
    printed = capsys.readouterr().out
    assert "5 tasks: 1 ok, 4 broken" in printed
    found = rows(printed)
    assert found["good"].endswith("  ok")
    assert "PASS (2 of 2 tests)" in found["fixed"]
    assert found["fixed"].endswith("untouched environment already passes (2 of 2 tests passed)")
    assert "FAIL (1 of 2 tests)" in found["wrong"]
    assert found["wrong"].endswith("oracle fails add: add(2, 3) != 5")
    assert "task.toml" in found["typo"] and found["typo"].split()[1:3] == ["-", "-"]
    assert found["bare"].endswith("no reference solution (no steps for the oracle to play)")


@pytest.mark.sandbox
def test_a_verifier_that_crashes_is_no_report_and_its_cause_is_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    scripts = {
        "missing-runner": "echo fetching the runner\nuvx -p 3.13 -w pytest==8.4.1 pytest /tests\n",
        "offline": "echo 'curl: (6) Could not resolve host: astral.sh' >&2\nexit 6\n",
    }
    for name, script in scripts.items():
        task = calc_task(tasks, name)
        settings = task / "task.toml"
        settings.write_text(settings.read_text().replace('"tap"', '"auto"'))
        (task / "tests" / "test.sh").write_text(script)
    assert check(str(tasks)) == 1
    printed = capsys.readouterr().out
    found = rows(printed)
    assert found["missing-runner"].split()[1:3] == ["NO", "REPORT"]
    assert found["missing-runner"].endswith(
        "the verifier did not run on the untouched task: a command it runs is missing: "
        "uvx: not found"
    )
    assert "needs the internet (astral.sh): curl: (6) Could not resolve host" in found["offline"]
    details = printed[printed.index("--- missing-runner") :]
    assert "    fetching the runner" in details and "uvx: command not found" in details


@pytest.mark.sandbox
def test_out_keeps_the_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_host_image()
    out = tmp_path / "kept"
    assert check(str(calc_task(tmp_path, "calc")), "--out", str(out)) == 0
    assert (out / "sprout.db").is_file() and (out / "layers").is_dir()
    assert f"run folder: {out}; oracle attempts: calc 1" in capsys.readouterr().out


def test_an_unknown_path_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(str(tmp_path / "nowhere")) == 2
    captured = capsys.readouterr()
    assert captured.err == f"sprout tasks check: {tmp_path / 'nowhere'}: no such file or folder\n"
    assert captured.out == ""


def test_workers_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(str(tmp_path), "--workers", "0") == 2
    assert capsys.readouterr().err == "sprout tasks check: --workers 0: expected at least 1\n"


@pytest.mark.sandbox
def test_bad_files_are_one_line_each_and_the_good_task_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    calc_task(tasks, "good")
    (calc_task(tasks, "instruction") / "instruction.md").write_bytes(b"Fix \xff it\n")
    settings = calc_task(tasks, "settings") / "task.toml"
    settings.unlink()
    settings.mkdir()
    dockerfile = calc_task(tasks, "dockerfile") / "environment" / "Dockerfile"
    dockerfile.write_bytes(b"FROM host\nRUN echo \xfe\n")
    (calc_task(tasks, "solution") / "solution" / "solve.sh").write_bytes(b"echo \xe9\n")
    copies = {
        "absolute": "COPY /etc/hostname /x",
        "climbing": "COPY ../outside /x",
        "linked": "COPY hostname /x",
    }
    for name, line in copies.items():
        task = calc_task(tasks, name)
        (task / "environment" / "Dockerfile").write_text(f"FROM host\n{line}\n")
    (tasks / "linked" / "environment" / "hostname").symlink_to("/etc/hostname")
    tb1 = tasks / "tb1"
    tb1.mkdir()
    (tb1 / "task.yaml").write_bytes(b"instruction: \xff\n")
    swebench, repos = swebench_with_a_pipe_in_its_clone(tmp_path)

    assert check(str(tasks), str(swebench), "--repos", str(repos)) == 1
    printed, errors = capsys.readouterr()
    assert "Traceback" not in errors
    found = rows(printed)
    assert found["good"].endswith("  ok")
    expected = {
        "instruction": "instruction.md: not UTF-8 (column 5: byte 0xff)",
        "settings": "task.toml: a folder, not a file",
        "dockerfile": "environment/Dockerfile: not UTF-8 (line 2, column 10: byte 0xfe)",
        "solution": "solution/solve.sh: not UTF-8 (column 6: byte 0xe9)",
        "absolute": "environment/Dockerfile:2: COPY /etc/hostname: no such file in",
        "climbing": "environment/Dockerfile:2: COPY ../outside: no such file in",
        "linked": "environment/Dockerfile:2: COPY hostname: hostname links out of the build "
        "context (to /etc/hostname)",
        "tb1": "task.yaml: not UTF-8 (column 14: byte 0xff)",
        "acme__calc-1": "set-up step 1 ('COPY .git /tmp/sprout-clone.git'): .git/pipe is a "
        "named pipe",
    }
    for name, problem in expected.items():
        assert found[name].split()[1:3] == ["-", "-"], found[name]
        assert problem in found[name], found[name]
    assert f"{len(expected) + 1} tasks: 1 ok, {len(expected)} broken" in printed


def scratch_folders(parent: Path) -> list[Path]:
    return sorted(parent.glob("sprout-check-*"))


@pytest.mark.sandbox
def test_the_temporary_run_folder_goes_when_the_check_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert check(str(calc_task(tmp_path, "calc"))) == 0
    assert scratch_folders(scratch) == []

    def fail(*_args: object) -> None:
        raise RuntimeError("a fault while checking")

    monkeypatch.setattr("sprout.commands.tasks._check_here", fail)
    with pytest.raises(RuntimeError, match="a fault while checking"):
        check(str(tmp_path / "calc"))
    assert scratch_folders(scratch) == [], "removed on the way out of an exception too"


def sprout_check(
    paths: list[Path], scratch: Path, *options: str, sigint_ignored: bool = False
) -> subprocess.Popen[str]:
    """`sprout tasks check PATHS OPTIONS` with its temporary folders in `scratch`;
    `sigint_ignored` starts it as a script's `cmd &` would, with SIGINT ignored."""
    environment = {**os.environ, "TMPDIR": str(scratch)}
    command = [sys.executable, "-m", "sprout.cli", "tasks", "check", *map(str, paths), *options]

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    return subprocess.Popen(
        command,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_sigint if sigint_ignored else None,
    )


def wait_for_folder(
    scratch: Path, process: subprocess.Popen[str], others: tuple[Path, ...] = ()
) -> Path:
    """The check's temporary folder (not one of `others`), once it holds the run's store."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        found = [
            f
            for f in scratch_folders(scratch)
            if f not in others and (f / "run" / "sprout.db").exists()
        ]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no temporary run folder appeared: {process.communicate()}")


def slow_task(root: Path, name: str, sleep: str = "2") -> Path:
    """The calc task whose verifier (run twice by a check: untouched, then solved) first
    sleeps `sleep` seconds, within a verifier timeout no loaded machine reaches."""
    task = calc_task(root, name)
    settings = task / "task.toml"
    settings.write_text(settings.read_text().replace("timeout_sec = 30\n", "timeout_sec = 600\n"))
    (task / "tests" / "test.sh").write_text(f"sleep {sleep}\n" + CALC_TEST_SH)
    return task


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("signal_number", "sigint_ignored"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
    ids=["ctrl-c", "sigterm", "ctrl-c-started-with-sigint-ignored"],
)
def test_ctrl_c_ends_the_check_and_removes_the_temporary_folder(
    tmp_path: Path, signal_number: int, sigint_ignored: bool
) -> None:
    require_host_image()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    tasks = [slow_task(tmp_path / "tasks", f"slow-{n}") for n in range(3)]
    process = sprout_check(tasks, scratch, sigint_ignored=sigint_ignored)
    folder = wait_for_folder(scratch, process)
    process.send_signal(signal_number)
    _, errors = process.communicate(timeout=120)
    assert process.returncode == 130, errors
    assert "interrupted after" in errors and "Traceback" not in errors
    assert not folder.exists() and scratch_folders(scratch) == []


@pytest.mark.sandbox
def test_a_killed_checks_folder_is_removed_by_the_next_check(
    tmp_path: Path, procs: ProcessWatch, marker: str
) -> None:
    require_host_image()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = sprout_check([slow_task(tmp_path / "tasks", "slow")], scratch)
    killed = wait_for_folder(scratch, process)
    process.kill()
    process.communicate()
    assert killed.exists(), "a kill leaves it behind"
    # the survivor's verifier sleeps until the test releases it: it runs all along the third
    survivor = sprout_check([slow_task(tmp_path / "more", "slow", sleep=marker)], scratch)
    live = wait_for_folder(scratch, survivor, others=(killed,))
    assert not killed.exists(), "the next check removed the dead check's folder"
    third = sprout_check([calc_task(tmp_path / "third", "quick")], scratch)
    assert third.wait(timeout=120) == 0
    assert survivor.poll() is None and live.exists(), "never the folder of a check that runs"
    release(procs, marker, survivor)
    assert survivor.wait(timeout=120) == 0, survivor.communicate()
    assert scratch_folders(scratch) == []


def test_an_images_file_that_is_not_utf8_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    images = tmp_path / "images.toml"
    images.write_bytes(b'[images]\n"python" = "\xff"\n')
    assert check(str(calc_task(tmp_path, "calc")), "--images", str(images)) == 2
    assert capsys.readouterr().err == (
        f"sprout tasks check: {images}: not UTF-8 (line 2, column 13: byte 0xff)\n"
    )


@pytest.mark.sandbox
def test_a_task_whose_dockerfile_ends_as_a_user_is_checked_as_that_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole pipeline (base layer, oracle, verifier) runs as the final USER: the reward
    file is written only when the solution's file belongs to that user in its home."""
    require_host_image()
    check_owner = (
        "#!/bin/bash\n"
        'if [ "$(id -un)" = app ] && [ "$(stat -c %U ~/result)" = app ]; '
        "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    folder = write_task(
        tmp_path,
        "as-app",
        instruction="Write done to ~/result.\n",
        dockerfile="FROM host\nRUN useradd -m -u 4243 -U app\nUSER app\nWORKDIR /home/app\n",
        solve="#!/bin/bash\necho done > ~/result\n",
        tests={"test.sh": check_owner},
    )
    assert check(str(folder)) == 0
    assert rows(capsys.readouterr().out)["as-app"].endswith("  ok")


# --- --results: a check that goes on where it stopped ------------------------------------

PASSES_UNTOUCHED = "#!/bin/bash\necho 1..1\necho 'ok 1 - nothing to catch'\n"
"""A calc task's tests after this: they pass on the untouched task, which a check now
finds broken; a recorded verdict of before is what a check that reads it back prints."""


def without_seconds(row: str) -> list[str]:
    """A row's cells (task, untouched, oracle, problem), those that do not vary by run."""
    task, untouched, oracle, _seconds, problem = re.split(r" {2,}", row, maxsplit=4)
    return [task, untouched, oracle, problem]


def recorded_lines(results: Path) -> dict[str, str]:
    """The lines of a --results file by task id (each ends with its newline)."""
    lines = results.read_text().splitlines(keepends=True)
    assert all(line.endswith("\n") for line in lines)
    return {json.loads(line)["task_id"]: line for line in lines}


@pytest.mark.sandbox
def test_results_records_each_check_and_the_next_check_prints_them_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    for name in ("one", "two", "three"):
        calc_task(tasks, name)
    results = tmp_path / "results.jsonl"
    assert check(str(tasks), "--results", str(results), "--workers", "3") == 0
    first = rows(capsys.readouterr().out)
    lines = recorded_lines(results)
    assert sorted(lines) == ["one", "three", "two"]
    assert json.loads(lines["one"]) == {
        "task_id": "one",
        "ok": True,
        "problem": None,
        "untouched": "fail (1 of 2 tests)",
        "oracle": "pass (2 of 2 tests)",
        "seconds": json.loads(lines["one"])["seconds"],
        "warnings": [],
        "detail": "",
        "loaded": True,
    }

    (tasks / "one" / "tests" / "test.sh").write_text(PASSES_UNTOUCHED)
    assert check(str(tasks), "--results", str(results)) == 0, "the recorded verdicts, not new"
    printed = capsys.readouterr().out
    assert f"3 tasks: 3 ok, 0 broken (3 from {results})" in printed
    assert all(rows(printed)[name] == f"{first[name]} (recorded)" for name in lines)
    assert recorded_lines(results) == lines, "nothing checked, nothing appended"

    results.write_text(lines["two"] + lines["three"])
    assert check(str(tasks), "--results", str(results)) == 1, "one is checked again"
    printed = capsys.readouterr().out
    found = rows(printed)
    assert found["one"].endswith("untouched environment already passes (1 of 1 tests passed)")
    assert found["two"].endswith(" (recorded)") and found["three"].endswith(" (recorded)")
    assert f"3 tasks: 2 ok, 1 broken (2 from {results})" in printed
    assert json.loads(recorded_lines(results)["one"])["ok"] is False


@pytest.mark.sandbox
def test_a_line_cut_short_by_a_kill_is_dropped_and_its_task_checked_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    tasks = tmp_path / "tasks"
    for name in ("a", "b"):
        calc_task(tasks, name)
    results = tmp_path / "results.jsonl"
    assert check(str(tasks), "--results", str(results), "--workers", "2") == 0
    capsys.readouterr()
    kept, cut = results.read_text().splitlines(keepends=True)
    results.write_text(kept + cut[: len(cut) // 2])
    assert check(str(tasks), "--results", str(results)) == 0
    printed = rows(capsys.readouterr().out)
    kept_id, cut_id = json.loads(kept)["task_id"], json.loads(cut)["task_id"]
    assert printed[kept_id].endswith("ok (recorded)")
    assert printed[cut_id].endswith("  ok"), "checked again"
    lines = results.read_text().splitlines(keepends=True)
    assert lines[0] == kept and json.loads(lines[1])["task_id"] == cut_id, "the cut part gone"


@pytest.mark.sandbox
def test_sigterm_keeps_every_finished_line_and_the_next_check_goes_on(
    tmp_path: Path, procs: ProcessWatch, marker: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check under way when SIGTERM comes is waited for, and recorded too."""
    require_host_image()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    tasks = [calc_task(tmp_path / "tasks", "quick"), slow_task(tmp_path / "tasks", "held", marker)]
    results = tmp_path / "results.jsonl"
    process = sprout_check(tasks, scratch, "--workers", "2", "--results", str(results))
    wait_until(lambda: results.exists() and "quick" in results.read_text(), process, "a line")
    process.send_signal(signal.SIGTERM)
    release(procs, marker, process)
    _, errors = process.communicate(timeout=120)
    assert process.returncode == 130, errors
    assert f"the same command with --results {results} goes on" in errors
    assert sorted(recorded_lines(results)) == ["held", "quick"]
    assert check(*map(str, tasks), "--results", str(results)) == 0
    assert f"2 tasks: 2 ok, 0 broken (2 from {results})" in capsys.readouterr().out


def test_a_load_failure_is_recorded_once_and_loaded_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = calc_task(tmp_path / "tasks", "typo", toml="network = maybe\n")
    results = tmp_path / "results.jsonl"
    assert check(str(typo), "--results", str(results)) == 1
    first = results.read_text()
    assert json.loads(first)["loaded"] is False and json.loads(first)["ok"] is False
    assert check(str(typo), "--results", str(results)) == 1
    printed = capsys.readouterr().out
    assert "(recorded)" not in printed and "from" not in printed.splitlines()[-1]
    assert results.read_text() == first, "the same load failure again: no second line"


RECORD = json.dumps({"task_id": "a", "problem": None, "untouched": "fail", "oracle": "pass"})


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            f'{RECORD[:-1]}, "seconds": 1.0}}\nnot json\n{RECORD}\n',
            ":2: not a line of an earlier `sprout tasks check --results` (Invalid JSON: ",
        ),
        (
            "[1, 2]\n",
            ":1: not a line of an earlier `sprout tasks check --results` (Input should be an "
            "object)",
        ),
        (
            f"{RECORD}\n",
            ":1: not a line of an earlier `sprout tasks check --results` (seconds: Field required)",
        ),
        (
            '{"task_id": 7}\n{"task_id": "b"',
            ":1: not a line of an earlier `sprout tasks check --results` (task_id: Input "
            "should be a valid string)",
        ),
    ],
    ids=["not-json-before-the-last", "not-an-object", "a-field-missing", "a-field-of-a-type"],
)
def test_a_results_file_that_is_not_check_records_is_bad_input_left_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, problem: str
) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text(content)
    assert check(str(calc_task(tmp_path, "calc")), "--results", str(results)) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"sprout tasks check: --results {results}{problem}")
    assert captured.err.count("\n") == 1 and captured.out == ""
    assert results.read_text() == content, "left as it is"


@pytest.mark.sandbox
def test_a_results_file_another_check_writes_is_refused_until_it_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two checks never interleave their lines: the second is one line, exit 2, and the file
    is as the first leaves it."""
    from sprout.durable import try_lock

    results = tmp_path / "check.jsonl"
    task = str(calc_task(tmp_path, "calc"))
    other = try_lock(results)  # another check holding it
    assert other is not None
    try:
        assert check(task, "--results", str(results)) == 2
        assert capsys.readouterr().err.strip() == (
            f"sprout tasks check: --results {results}: another `sprout tasks check` is writing "
            "it; let it end first"
        )
        assert results.read_bytes() == b""
    finally:
        other.release()
    assert check(task, "--results", str(results)) == 0
    assert list(recorded_lines(results)) == ["calc"]


def test_out_is_refused_with_ray(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kept"
    assert check(str(calc_task(tmp_path, "calc")), "--ray", "local", "--out", str(out)) == 2
    assert capsys.readouterr().err == (
        "sprout tasks check: --out: not with --ray: each check's run folder is on its node, "
        "removed when the check ends\n"
    )
    assert not out.exists()


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ray_local_checks_as_here_and_records_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ray", reason="--ray needs Ray: pip install 'sprout-rl[dist]'")
    require_host_image()
    # Ray would turn its token authentication on for the whole of this process when
    # `local` starts a cluster (tests/cluster/conftest.py says why that matters)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    tasks = tmp_path / "tasks"
    calc_task(tasks, "good")
    calc_task(tasks, "fixed", code=FIXED)
    assert check(str(tasks)) == 1
    here = rows(capsys.readouterr().out)
    results = tmp_path / "results.jsonl"
    assert check(str(tasks), "--ray", "local", "--workers", "2", "--results", str(results)) == 1
    printed = capsys.readouterr().out
    there = rows(printed)
    assert "2 tasks: 1 ok, 1 broken" in printed

    for name in ("good", "fixed"):  # all but the seconds
        assert without_seconds(there[name]) == without_seconds(here[name]), name
    assert sorted(recorded_lines(results)) == ["fixed", "good"]


def test_ray_without_ray_installed_says_how_to_install_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a)
    )
    assert check(str(calc_task(tmp_path, "calc")), "--ray") == 2
    assert capsys.readouterr().err == (
        "sprout tasks check: --ray: Ray is not installed; pip install 'sprout-rl[dist]'\n"
    )
