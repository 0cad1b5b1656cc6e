"""SWE-rebench (V1) rows as published: SWE-bench's fields plus the harness specification in
`install_config`, from which the eval script is built as the publisher's fork builds it."""

from __future__ import annotations

from pathlib import Path

from sprout.task import GitHistory, Task
from sprout.tasks import load_tasks
from sprout.tasks.sources.swebench_rows import apply_command
from sprout.tasks.sources.swerebench_v1 import load_swerebench_v1
from tests.support.swerebench_rows import F2P, P2P, V1_CONFIG, V1_INSTANCE, v1_row, write_rows

MADE = {
    "base": "a" * 40,
    "fix": "b" * 40,
    "patch": "diff --git a/calc.sh b/calc.sh\n--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n-x\n+y\n",
    "test_patch": (
        "diff --git a/tests/t_sub.sh b/tests/t_sub.sh\n--- a/tests/t_sub.sh\n+++ b/tests/t_sub.sh\n"
        "@@ -1 +1 @@\n-x\n+y\n"
        "diff --git a/tests/t_add.sh b/tests/t_add.sh\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/tests/t_add.sh\n@@ -0,0 +1 @@\n+y\n"
        "diff --git a/tests/data.json b/tests/data.json\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/tests/data.json\n@@ -0,0 +1 @@\n+{}\n"
    ),
}


def only(path: Path) -> Task:
    [task] = load_swerebench_v1(path)
    assert isinstance(task, Task), task
    return task


def test_a_published_row_becomes_a_task_with_the_forks_eval_script(tmp_path: Path) -> None:
    task = only(write_rows(tmp_path / "v1.jsonl", [v1_row(MADE)]))
    assert task.id == V1_INSTANCE and task.workdir == "/testbed"
    assert task.image == "swerebench/sweb.eval.x86_64.acme_1776_calc-12:latest"
    assert task.instruction == "add() subtracts and mul() adds."
    assert task.solution[0].command == apply_command(MADE["patch"])
    assert task.git_history == GitHistory(repo="/testbed", base_commit="a" * 40)
    assert task.results == "swebench" and task.swebench is not None
    grading = task.swebench
    assert (grading.log_parser, grading.harness) == ("parse_log_pytest", "swe-rebench")
    assert (grading.fail_to_pass, grading.pass_to_pass) == (tuple(F2P), tuple(P2P))
    script = task.test_files["eval.sh"]
    reset = f"git checkout {'a' * 40} tests/t_sub.sh"  # the files the patch changes, not adds
    assert script.splitlines()[:5] == [
        "#!/bin/bash",
        "set -uxo pipefail",
        "source /opt/miniconda3/bin/activate",
        "conda activate testbed",
        "cd /testbed",
    ]
    after_diff = script.split(f"git -c core.fileMode=false diff {'a' * 40}\n")[1].splitlines()
    assert after_diff[:5] == [
        "source /opt/miniconda3/bin/activate",
        "conda activate testbed",
        "LANG=C.UTF-8 LC_ALL=C.UTF-8 true",
        reset,
        "git apply -v - <<'EOF_114329324912'",
    ]
    assert script.endswith(
        "EOF_114329324912\n: '>>>>> Start Test Output'\n"
        "LANG=C.UTF-8 LC_ALL=C.UTF-8 bash tests/run_pytest_style.sh tests/t_sub.sh "
        f"tests/t_add.sh\n: '>>>>> End Test Output'\n{reset}\n"
    )
    assert task.verifier_command == "bash /tests/eval.sh > /logs/verifier/test_output.txt 2>&1"
    assert MADE["test_patch"] not in task.instruction


def test_an_image_field_and_specs_as_exports_write_them(tmp_path: Path) -> None:
    """The row's own image where it has one; `install_config` as text, nulls dropped, a
    list of test commands run as its last; eval commands before the rest."""
    config = {**V1_CONFIG, "install": None, "eval_commands": ["export X=1"]}
    rows = [
        v1_row(MADE, instance_id="a", docker_image="127.0.0.1:5000/calc:v1"),
        v1_row(MADE, instance_id="b", install_config=repr(config)),
        v1_row(MADE, instance_id="c", install_config={**V1_CONFIG, "test_cmd": ["a", "b"]}),
    ]
    tasks = load_swerebench_v1(write_rows(tmp_path / "v1.jsonl", rows))
    assert all(isinstance(task, Task) for task in tasks), tasks
    first, second, third = (task for task in tasks if isinstance(task, Task))
    assert first.image == "127.0.0.1:5000/calc:v1"
    assert "\ncd /testbed\nexport X=1\ngit config" in second.test_files["eval.sh"]
    assert "LANG=C.UTF-8 LC_ALL=C.UTF-8 true" not in second.test_files["eval.sh"]
    assert "\nLANG=C.UTF-8 LC_ALL=C.UTF-8 b tests/" in third.test_files["eval.sh"]


def test_bad_rows_are_one_line_each_and_the_others_still_load(tmp_path: Path) -> None:
    rows = [
        v1_row(MADE, instance_id="no-parser", install_config={**V1_CONFIG, "log_parser": "x"}),
        v1_row(MADE, instance_id="no-cmd", install_config={**V1_CONFIG, "test_cmd": None}),
        v1_row(MADE, instance_id="bad-f2p", FAIL_TO_PASS="not a list"),
        v1_row(MADE),
    ]
    path = write_rows(tmp_path / "v1.jsonl", rows)
    loaded = load_tasks([path])
    assert [task.id for task in loaded.tasks] == [V1_INSTANCE]
    assert loaded.errors == [
        f"no-parser: {path}:1: install_config.log_parser: 'x': no parser of that name, "
        "neither sprout's own nor the swebench package's (docs/tasks.md lists them)",
        f"no-cmd: {path}:2: install_config.test_cmd: Field required",
        f"bad-f2p: {path}:3: FAIL_TO_PASS: expected a list of names, or a string holding one",
    ]
