"""SWE-Gym rows as published, read with the tables of a checkout of SWE-Gym's fork of
SWE-bench's harness (`--swe-gym DIR`): the specification and parser per repository, the
2.0 harness's eval script, SWE-Gym's image names; what the tables lack is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.cli import main
from sprout.tasks import load_tasks
from tests.support.swerebench_rows import GYM_INSTANCE, gym_row, write_gym_fork, write_rows

MADE = {
    "base": "a" * 40,
    "fix": "b" * 40,
    "patch": "diff --git a/calc.sh b/calc.sh\n--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n-x\n+y\n",
    "test_patch": (
        "diff --git a/tests/t_add.sh b/tests/t_add.sh\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/tests/t_add.sh\n@@ -0,0 +1 @@\n+y\n"
        "diff --git a/tests/t_old.sh b/tests/t_old.sh\ndeleted file mode 100644\n"
        "--- a/tests/t_old.sh\n+++ /dev/null\n@@ -1 +0,0 @@\n-y\n"
    ),
}


def test_a_published_row_becomes_a_task_on_the_forks_tables(tmp_path: Path) -> None:
    fork = write_gym_fork(tmp_path / "SWE-Bench-Fork")
    loaded = load_tasks([write_rows(tmp_path / "gym.jsonl", [gym_row(MADE)])], swe_gym=fork)
    assert loaded.errors == []
    [task] = loaded.tasks
    assert task.id == GYM_INSTANCE and task.workdir == "/testbed"
    assert task.image == "xingyaoww/sweb.eval.x86_64.acme_s_calc-21:latest"
    assert task.swebench is not None
    assert (task.swebench.log_parser, task.swebench.harness) == ("parse_log_pytest", "swe-gym")
    script = task.test_files["eval.sh"]
    assert f"\ngit diff {'a' * 40}\n" in script and "Start Test Output" not in script
    # 2.0 names every file the test patch names, the deleted one too; resets the old ones
    assert "\nbash tests/run_pytest_style.sh tests/t_add.sh tests/t_old.sh\n" in script
    assert script.endswith(f"\ngit checkout {'a' * 40} tests/t_old.sh\n")
    assert "\ntrue\n" in script  # the specification's install command


def test_mypy_cases_are_selected_by_name(tmp_path: Path) -> None:
    fork = write_gym_fork(tmp_path / "fork")
    for name in ("constants.py", "log_parsers.py"):
        module = fork / "swebench/harness" / name
        text = module.read_text().replace('"acme/other"', '"python/mypy"')
        module.write_text(text.replace("parse_log_private}", "parse_log_pytest}"))
    patch = (
        "diff --git a/test-data/unit/check.test b/test-data/unit/check.test\n"
        "+[case testA]\n+[case testB-x]\n"
    )
    row = gym_row(MADE, instance_id="python__mypy-1", repo="python/mypy", test_patch=patch)
    [task] = load_tasks([write_rows(tmp_path / "gym.jsonl", [row])], swe_gym=fork).tasks
    assert '\npytest -rA "testA or testB-x"\n' in task.test_files["eval.sh"]


def test_what_the_tables_lack_is_one_line_and_the_others_load(tmp_path: Path) -> None:
    fork = write_gym_fork(tmp_path / "fork")
    rows = [
        gym_row(MADE, instance_id="acme__calc-9", version="9.9"),
        gym_row(MADE, instance_id="acme__other-1", repo="acme/other"),
        gym_row(MADE, instance_id="nobody__x-1", repo="nobody/x"),
        gym_row(MADE),
    ]
    path = write_rows(tmp_path / "gym.jsonl", rows)
    loaded = load_tasks([path], swe_gym=fork)
    assert [task.id for task in loaded.tasks] == [GYM_INSTANCE]
    folder = fork.resolve()
    assert loaded.errors == [
        f"acme__calc-9: {path}:1: version: {folder} has no specification (with a test_cmd) "
        "for acme/calc 9.9",
        f"acme__other-1: {path}:2: repo: {folder} names parse_log_private, which sprout does "
        "not have for acme/other",
        f"nobody__x-1: {path}:3: version: {folder} has no specification (with a test_cmd) "
        "for nobody/x 0.1",
    ]


def test_a_folder_that_is_not_the_fork_is_one_line_for_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_rows(tmp_path / "gym.jsonl", [gym_row(MADE)])
    [error] = load_tasks([path], swe_gym=tmp_path).errors
    assert error == (
        f"--swe-gym {tmp_path}: no swebench/harness/constants.py (a checkout of SWE-Gym's fork "
        "of SWE-bench, github.com/SWE-Gym/SWE-Bench-Fork)"
    )
    broken = write_gym_fork(tmp_path / "broken")
    (broken / "swebench/harness/constants.py").write_text("raise SystemExit('no tables here')\n")
    [error] = load_tasks([path], swe_gym=broken).errors
    assert error == f"--swe-gym {broken}: its tables could not be read: no tables here"
    assert main(["tasks", "check", str(path), "--swe-gym", str(broken)]) == 1
    assert "its tables could not be read" in capsys.readouterr().out
