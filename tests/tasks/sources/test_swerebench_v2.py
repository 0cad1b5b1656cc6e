"""SWE-rebench V2 rows as published: a row becomes a task on the publisher's image, in the
repository's folder, with its test patch and test commands hidden on the verifier's fork and
its parser named; bad rows are one line each; parquet reads as JSONL does."""

from __future__ import annotations

import pytest

from sprout.task import GitHistory, RebenchGrading, Task
from sprout.tasks import load_tasks
from sprout.tasks.sources.swebench_rows import apply_command
from sprout.tasks.sources.swerebench_v2 import load_swerebench
from tests.support.swerebench_rows import (
    F2P,
    INSTALL_CONFIG,
    INSTANCE,
    P2P,
    rebench_row,
    write_rows,
)

MADE = {
    "base": "a" * 40,
    "fix": "b" * 40,
    "patch": "diff --git a/calc.sh b/calc.sh\n--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n-x\n+y\n",
    "test_patch": "diff --git a/tests/t_add.sh b/tests/t_add.sh\n",
}


def test_a_published_row_becomes_a_task(tmp_path) -> None:
    path = write_rows(tmp_path / "v2.jsonl", [rebench_row(MADE)])
    [task] = load_swerebench(path)
    assert isinstance(task, Task), task
    assert task.id == INSTANCE and task.path == path
    assert task.image == "swerebenchv2/acme-calc:7-aaaaaaa"  # docker.io/ as the cache names it
    assert task.workdir == "/calc" and task.instruction == "add() subtracts and mul() adds."
    assert task.solution[0].command == apply_command(MADE["patch"])
    assert task.git_history == GitHistory(repo="/calc", base_commit="a" * 40)
    assert task.results == "swe-rebench"
    assert task.rebench == RebenchGrading(
        log_parser="parse_log_jq", fail_to_pass=tuple(F2P), pass_to_pass=tuple(P2P)
    )
    assert task.test_files["test_patch.diff"] == MADE["test_patch"]
    assert task.verifier_command == "bash /tests/run.sh"
    assert task.test_files["run.sh"].splitlines()[1:] == [
        "cd /calc",
        "exec > /logs/verifier/stdout.log 2> /logs/verifier/stderr.log",
        "set -e",
        "git apply -v --3way --recount --ignore-space-change --whitespace=nowarn "
        "/tests/test_patch.diff",
        "bash tests/run.sh",
    ]
    assert task.verifier_env == {"_JAVA_OPTIONS": "-Djava.net.preferIPv6Addresses=false"}
    for hidden in (MADE["test_patch"], "bash tests/run.sh", "b" * 40):
        assert hidden not in task.instruction


def test_install_config_and_lists_as_exports_write_them(tmp_path) -> None:
    """`install_config` as a JSON string or a Python dict's repr; a test command alone or a
    list with blanks; test lists as Python-literal strings."""
    config = INSTALL_CONFIG
    rows = [
        rebench_row(MADE, instance_id="a", install_config=repr(config)),
        rebench_row(MADE, instance_id="b", install_config={**config, "test_cmd": "make check"}),
        rebench_row(MADE, instance_id="c", install_config={**config, "test_cmd": ["", "a", "b"]}),
        rebench_row(MADE, instance_id="d", PASS_TO_PASS=repr(P2P), FAIL_TO_PASS=repr(F2P)),
    ]
    tasks = load_swerebench(write_rows(tmp_path / "v2.jsonl", rows))
    assert all(isinstance(task, Task) for task in tasks), tasks
    scripts = [
        task.test_files["run.sh"].splitlines()[5:] for task in tasks if isinstance(task, Task)
    ]
    assert scripts == [["bash tests/run.sh"], ["make check"], ["a", "b"], ["bash tests/run.sh"]]


def test_bad_rows_are_one_line_each_and_the_others_still_load(tmp_path) -> None:
    config = INSTALL_CONFIG
    rows = [
        rebench_row(MADE, instance_id="no-parser", install_config={**config, "log_parser": "x"}),
        rebench_row(MADE, instance_id="no-cmd", install_config={**config, "test_cmd": [" "]}),
        rebench_row(MADE, instance_id="no-f2p", FAIL_TO_PASS=[]),
        rebench_row(MADE, instance_id="bad-config", install_config="{not a dict"),
        {k: v for k, v in rebench_row(MADE, instance_id="no-image").items() if k != "image_name"},
        rebench_row(MADE),
    ]
    path = write_rows(tmp_path / "v2.jsonl", rows)
    loaded = load_tasks([path])
    assert [task.id for task in loaded.tasks] == [INSTANCE]
    assert loaded.errors == [
        f"no-parser: {path}:1: install_config.log_parser: 'x': no parser of that name, neither "
        "sprout's own nor the swebench package's (docs/tasks.md lists them)",
        f"no-cmd: {path}:2: install_config.test_cmd: List should have at least 1 item after "
        "validation, not 0",
        f"no-f2p: {path}:3: FAIL_TO_PASS: List should have at least 1 item after validation, not 0",
        f"bad-config: {path}:4: install_config: expected an object, or a string holding one",
        f"no-image: {path}:5: image_name: Field required",
    ]


def test_a_parquet_file_reads_as_its_jsonl_does(tmp_path) -> None:
    parquet = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    rows = [rebench_row(MADE), rebench_row(MADE, instance_id="no-f2p", FAIL_TO_PASS=[])]
    path = tmp_path / "train-00000-of-00001.parquet"
    parquet.write_table(pyarrow.Table.from_pylist(rows), path, row_group_size=1)
    loaded = load_tasks([path])
    jsonl = load_tasks([write_rows(tmp_path / "v2.jsonl", rows)])
    assert [task.model_dump(exclude={"path"}) for task in loaded.tasks] == [
        task.model_dump(exclude={"path"}) for task in jsonl.tasks
    ]
    assert loaded.errors == [
        f"no-f2p: {path}: row 2: FAIL_TO_PASS: List should have at least 1 item after "
        "validation, not 0"
    ]
