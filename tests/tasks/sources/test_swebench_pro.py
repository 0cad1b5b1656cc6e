"""SWE-bench Pro rows as published: a row becomes a task on the publisher's image with the
publisher's prompt, its run script and parser hidden on the verifier's fork; bad rows are
one line each; parquet reads as JSONL does; SWE-bench's own rows are read as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.task import GitHistory, Task
from sprout.tasks import load_tasks
from sprout.tasks.sources.swebench_pro import load_swebench_pro
from sprout.tasks.sources.swebench_rows import apply_command
from tests.support.swebench_pro_rows import (
    F2P,
    INSTANCE,
    P2P,
    PARSER,
    RUN_SCRIPT,
    TAG,
    TEST_FILE,
    pro_row,
    write_rows,
    write_run_scripts,
)

MADE = {
    "base": "a" * 40,
    "fix": "b" * 40,
    "patch": "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x\n+y\n",
    "test_patch": "diff --git a/tests/t.py b/tests/t.py\n",
}


def only(results: list[Task | Exception]) -> Task:
    [task] = results
    assert isinstance(task, Task), task
    return task


@pytest.fixture
def rows_dir(tmp_path: Path) -> Path:
    write_run_scripts(tmp_path / "run_scripts")
    return tmp_path


def test_a_published_row_becomes_a_task(rows_dir: Path) -> None:
    path = write_rows(rows_dir / "pro.jsonl", [pro_row(MADE)])
    task = only(load_swebench_pro(path))
    assert task.id == INSTANCE and task.path == path
    assert task.image == f"jefzda/sweap-images:{TAG}" and task.workdir == "/app"
    assert task.instruction == (
        "add() subtracts and mul() adds.\n\nRequirements:\n- add(a, b) returns a + b\n"
        "- mul(a, b) returns a * b\n\nNew interfaces introduced:\nNo new interfaces are "
        "introduced."
    )
    [step] = task.setup  # all but the last line: the repository at its base commit
    assert step.command == f"git reset --hard {'a' * 40}\ngit clean -fd\ngit checkout {'a' * 40}"
    assert step.workdir == "/app" and "b" * 40 not in step.command
    assert task.git_history == GitHistory(repo="/app", base_commit="a" * 40)
    assert task.solution[0].command == apply_command(MADE["patch"])
    assert task.results == "swebench-pro" and task.required_tests == (*F2P, *P2P)
    assert task.test_files["run_script.sh"] == RUN_SCRIPT
    assert task.test_files["parser.py"] == PARSER
    assert task.verifier_command == "bash /tests/run.sh"
    assert task.test_files["run.sh"].splitlines()[1:] == [
        "cd /app",
        f"git checkout {'b' * 40} -- {TEST_FILE}",
        f"bash /tests/run_script.sh {TEST_FILE} > /logs/verifier/stdout.log "
        "2> /logs/verifier/stderr.log",
        "python /tests/parser.py /logs/verifier/stdout.log /logs/verifier/stderr.log "
        "/logs/verifier/output.json",
    ]
    for hidden in (RUN_SCRIPT, "b" * 40, MADE["test_patch"]):
        assert hidden not in task.instruction


def test_lists_are_read_as_the_harness_reads_them(rows_dir: Path) -> None:
    """Python literals (as the dataset holds them), JSON, or lists; files joined by commas."""
    rows = [
        pro_row(MADE, instance_id="a", selected_test_files_to_run="['t/a.py', 't/b.py']"),
        pro_row(MADE, instance_id="b", selected_test_files_to_run='["t/a.py", "t/b.py"]'),
        pro_row(MADE, instance_id="c", selected_test_files_to_run=["t/a.py", "t/b.py"]),
        pro_row(MADE, instance_id="d", fail_to_pass=json.dumps(F2P + F2P), pass_to_pass="[]"),
    ]
    for row in rows:
        write_run_scripts(rows_dir / "run_scripts", str(row["instance_id"]))
    loaded = load_swebench_pro(write_rows(rows_dir / "pro.jsonl", rows))
    tasks = [task for task in loaded if isinstance(task, Task)]
    assert len(tasks) == 4, loaded
    for task in tasks[:3]:
        assert "bash /tests/run_script.sh t/a.py,t/b.py > " in task.test_files["run.sh"]
    assert tasks[3].required_tests == tuple(F2P)


def test_no_selected_files_runs_the_script_with_no_argument(rows_dir: Path) -> None:
    """The harness joins an empty list into nothing: the run script runs all its tests."""
    path = write_rows(rows_dir / "pro.jsonl", [pro_row(MADE, selected_test_files_to_run="[]")])
    script = only(load_swebench_pro(path)).test_files["run.sh"]
    assert "bash /tests/run_script.sh  > /logs/verifier/stdout.log" in script


def test_a_one_line_set_up_command_leaves_checkpoint_0_as_the_image_has_it(
    rows_dir: Path,
) -> None:
    row = pro_row(MADE, before_repo_set_cmd=f"git checkout {'b' * 40} -- {TEST_FILE}\n")
    task = only(load_swebench_pro(write_rows(rows_dir / "pro.jsonl", [row])))
    assert task.setup == ()
    assert f"\ngit checkout {'b' * 40} -- {TEST_FILE}\n" in task.test_files["run.sh"]


def test_an_image_field_names_a_mirror_of_the_image(rows_dir: Path) -> None:
    row = pro_row(MADE, image_name=f"127.0.0.1:5000/jefzda/sweap-images:{TAG}")
    task = only(load_swebench_pro(write_rows(rows_dir / "pro.jsonl", [row])))
    assert task.image == f"127.0.0.1:5000/jefzda/sweap-images:{TAG}"


def test_bad_rows_are_one_line_each_and_the_others_still_load(rows_dir: Path) -> None:
    scripts = rows_dir / "run_scripts"
    for name in ("no-tag", "bad-list", "no-parser"):
        write_run_scripts(scripts, name)
    (scripts / "no-parser" / "parser.py").unlink()
    (scripts / "no-run-script").mkdir()
    tagless = {k: v for k, v in pro_row(MADE, instance_id="no-tag").items() if k != "dockerhub_tag"}
    rows = [
        tagless,
        pro_row(MADE, instance_id="bad-list", fail_to_pass="tests.test_calc"),
        pro_row(MADE, instance_id="no-folder"),
        pro_row(MADE, instance_id="no-parser"),
        pro_row(MADE, instance_id="no-run-script"),
        pro_row(MADE, instance_id="../escape"),
        pro_row(MADE, dockerhub_tag="Not A Tag"),
        pro_row(MADE),
    ]
    path = write_rows(rows_dir / "pro.jsonl", rows)
    with path.open("a") as handle:
        handle.write("{not json\n")
    loaded = load_tasks([path])
    assert [task.id for task in loaded.tasks] == [INSTANCE]
    assert loaded.errors[:5] == [
        f"no-tag: {path}:1: dockerhub_tag: Field required",
        f"bad-list: {path}:2: fail_to_pass: expected a list of names, or a string holding one",
        f"no-folder: {path}:3: instance_id: {scripts} has no folder for this instance",
        f"no-parser: {path}:4: parser.py: {scripts}/no-parser/parser.py is missing",
        f"no-run-script: {path}:5: run_script.sh: {scripts}/no-run-script/run_script.sh is missing",
    ]
    assert loaded.errors[5] == (
        f"../escape: {path}:6: instance_id: String should match pattern "
        "'^[A-Za-z0-9_-][A-Za-z0-9_.-]*$'"
    )
    assert loaded.errors[6] == (
        f"{INSTANCE}: {path}:7: dockerhub_tag: image 'jefzda/sweap-images:Not A Tag': "
        "'Not A Tag' is no tag"
    )
    assert loaded.errors[7].startswith(f"?: {path}:9: not valid JSON (")


def test_run_scripts_come_from_beside_the_file_or_the_option(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "data" / "pro.jsonl", [pro_row(MADE)])
    [error] = load_tasks([path]).errors
    assert error == (
        f"{path}: no {tmp_path}/data/run_scripts: not a folder (SWE-bench Pro's run_scripts/, "
        "from the publisher's repository, beside the file or named by --run-scripts)"
    )
    elsewhere = write_run_scripts(tmp_path / "checkout" / "run_scripts")
    loaded = load_tasks([path], run_scripts=elsewhere)
    assert loaded.errors == [] and [task.id for task in loaded.tasks] == [INSTANCE]
    [error] = load_tasks([path], run_scripts=tmp_path / "nowhere").errors
    assert error.startswith(f"{path}: --run-scripts {tmp_path}/nowhere: not a folder")


def test_swebench_rows_are_read_as_before(tmp_path: Path) -> None:
    """A file whose rows lack Pro's fields still goes to the SWE-bench loader."""
    row = {"instance_id": "a__b-1", "repo": "a/b", "problem_statement": "x"}
    path = write_rows(tmp_path / "dev.jsonl", [row])
    [error] = load_tasks([path]).errors
    assert error.startswith(f"a__b-1: {path}:1: the row has no eval_script and log_parser")


def test_a_parquet_file_reads_as_its_jsonl_does(rows_dir: Path) -> None:
    parquet = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    rows = [pro_row(MADE), pro_row(MADE, instance_id="no-folder")]
    path = rows_dir / "test-00000-of-00001.parquet"
    parquet.write_table(pyarrow.Table.from_pylist(rows), path, row_group_size=1)
    loaded = load_tasks([path])
    jsonl = load_tasks([write_rows(rows_dir / "pro.jsonl", rows)])
    assert [task.model_dump(exclude={"path"}) for task in loaded.tasks] == [
        task.model_dump(exclude={"path"}) for task in jsonl.tasks
    ]
    scripts = rows_dir / "run_scripts"
    assert loaded.errors == [
        f"no-folder: {path}: row 2: instance_id: {scripts} has no folder for this instance"
    ]


def test_a_parquet_file_of_other_rows_is_one_line(tmp_path: Path) -> None:
    parquet = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    path = tmp_path / "dev.parquet"
    parquet.write_table(pyarrow.Table.from_pylist([{"instance_id": "a__b-1"}]), path)
    write_run_scripts(tmp_path / "run_scripts")
    [error] = load_tasks([path]).errors
    assert error == (
        f"{path}: not the rows of SWE-bench Pro, SWE-rebench (V1 or V2) or R2E-Gym (sprout "
        "reads parquet files of those; SWE-bench rows as JSON Lines)"
    )
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    [error] = load_tasks([tmp_path / "broken.parquet"]).errors
    assert error.startswith(f"{tmp_path / 'broken.parquet'}: not a parquet file sprout can read")
