"""R2E-Gym rows as published: each row a task on its own image, its hidden tests withheld
from checkpoint 0, its fix the oracle's patch; a bad row is one line and the others load."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sprout.task import GitHistory
from sprout.tasks import load_tasks
from sprout.tasks.sources.r2egym import (
    RUN_TESTS,
    TESTS,
    WORKDIR,
    is_r2egym_rows,
    issue_text,
)
from tests.support.r2egym_rows import PUBLISHED_FIELDS, published_row

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIXED = BUGGY.replace("a - b", "a + b", 1)
EXPECTED = {"test_add": "PASSED", "test_not_yet": "FAILED", "TestSub.test_sub": "PASSED"}
FIX, PARENT = "b" * 40, "a" * 40
DIFF = """diff --git a/calc.py b/calc.py
index 1111111..2222222 100644
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""


def row(diff: str = DIFF, **changes: object) -> dict[str, object]:
    made = published_row(
        repo_name="calc",
        image=f"namanjain12/calc_final:{FIX}",
        commit_hash=FIX,
        parent=PARENT,
        diff=diff,
        expected=EXPECTED,
    )
    return {**made, **changes}


def write_rows(path: Path, rows: list[dict[str, object] | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_a_published_row_is_a_task_on_its_image_with_its_tests_withheld(tmp_path: Path) -> None:
    loaded = load_tasks([write_rows(tmp_path / "train.jsonl", [row()])])
    assert loaded.errors == []
    [task] = loaded.tasks
    assert task.id == f"calc-{FIX}"
    assert task.image == f"namanjain12/calc_final:{FIX}" and task.workdir == WORKDIR
    assert task.instruction == "add() subtracts. Make it add."  # the text inside [ISSUE]
    assert task.withheld == (TESTS, RUN_TESTS) == ("/r2e_tests", "/testbed/run_tests.sh")
    assert task.test_files == {} and task.tests_dir is None
    assert task.git_history == GitHistory(repo="/testbed", base_commit=PARENT)
    assert task.results == "r2egym" and task.r2egym is not None
    assert task.r2egym.expected == EXPECTED
    assert "timeout 300 bash /root/run_tests.sh" in task.verifier_command
    assert f"> {task.r2egym.log} 2>&1" in task.verifier_command
    [step] = task.setup  # R2E-Gym's start: no bytecode left
    assert "-name '*.pyc' -delete" in step.command and step.workdir == WORKDIR
    assert "[ISSUE]" not in task.instruction and "expected_output_json" not in task.instruction


def test_the_gold_patch_applies_at_the_parent_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text(BUGGY)
    (repo / "NEWS.txt").write_text("old\n")
    subprocess.run([*GIT, "init", "--quiet", str(repo)], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "--quiet", "-m", "base"], check=True)
    (repo / "calc.py").write_text(FIXED + "\n\ndef mul(a, b):\n    return a * b\n")
    (repo / "NEWS.txt").write_text("new\n")  # not Python: R2E-Gym's patch leaves it out
    diff = subprocess.run(
        [*GIT, "-C", str(repo), "diff"], check=True, capture_output=True, text=True
    ).stdout
    subprocess.run([*GIT, "-C", str(repo), "checkout", "--quiet", "."], check=True)
    [task] = load_tasks([write_rows(tmp_path / "rows.jsonl", [row(diff)])]).tasks
    [step] = task.solution
    subprocess.run(["sh", "-c", step.command], cwd=repo, check=True, capture_output=True)
    assert (repo / "calc.py").read_text().endswith("def mul(a, b):\n    return a * b\n")
    assert (repo / "NEWS.txt").read_text() == "old\n"


def test_bad_rows_are_one_line_each_naming_file_row_and_field(tmp_path: Path) -> None:
    rows = write_rows(
        tmp_path / "rows.jsonl",
        [
            row(),
            {k: v for k, v in row(commit_hash="c" * 40).items() if k != "expected_output_json"},
            row(commit_hash="d" * 40, parsed_commit_content="{not json"),
            row(commit_hash="e" * 40, expected_output_json='["test_add"]'),
            row(commit_hash="f" * 40, parsed_commit_content=json.dumps({"file_diffs": 3})),
            "{half a line",
            row(commit_hash="1" * 40),
        ],
    )
    loaded = load_tasks([rows])
    assert [task.id for task in loaded.tasks] == [f"calc-{FIX}", f"calc-{'1' * 40}"]
    missing, commit, statuses, shape, line = loaded.errors
    assert missing == f"calc-{'c' * 40}: {rows}:2: expected_output_json: Field required"
    assert commit.startswith(f"calc-{'d' * 40}: {rows}:3: parsed_commit_content: not valid JSON")
    assert statuses == (
        f"calc-{'e' * 40}: {rows}:4: expected_output_json: "
        "expected a JSON object of test name -> status"
    )
    assert shape.startswith(f"calc-{'f' * 40}: {rows}:5: parsed_commit_content: file_diffs: ")
    assert line.startswith(f"?: {rows}:6: not valid JSON")
    assert all("\n" not in error for error in loaded.errors)


def test_a_row_without_its_repository_or_commit_is_named_by_a_question_mark(
    tmp_path: Path,
) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", [row(commit_hash="not a commit")])
    [error] = load_tasks([rows]).errors
    assert error.startswith(f"?: {rows}:1: commit_hash: String should match pattern")


def test_the_rows_parquet_file_loads_as_its_jsonl_would(tmp_path: Path) -> None:
    parquet = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    bad = {k: v for k, v in row(commit_hash="c" * 40).items() if k != "problem_statement"}
    table = pyarrow.Table.from_pylist([row(), {**bad, "problem_statement": None}])
    assert table.column_names == list(PUBLISHED_FIELDS)
    path = tmp_path / "train-00000-of-00001.parquet"
    parquet.write_table(table, path)
    assert is_r2egym_rows(path)
    loaded = load_tasks([path])
    [task] = loaded.tasks
    assert task.id == f"calc-{FIX}" and task.r2egym is not None
    assert task.r2egym.expected == EXPECTED
    assert loaded.errors == [f"calc-{'c' * 40}: {path}: row 2: problem_statement: Field required"]


def test_a_parquet_row_without_the_rows_columns_is_one_line_naming_them(tmp_path: Path) -> None:
    parquet = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    path = tmp_path / "other.parquet"
    parquet.write_table(pyarrow.Table.from_pylist([{"repo_name": "calc"}]), path)
    [error] = load_tasks([path]).errors
    assert error.startswith(f"?: {path}: row 1: ") and "Field required" in error


def test_swebench_rows_still_load_as_swebench_rows(tmp_path: Path) -> None:
    """R2E-Gym's SWE-bench-Verified export is SWE-bench's rows plus `docker_image`: they
    have an instance_id, and load through the SWE-bench path."""
    swebench = {
        "instance_id": "acme__calc-1",
        "repo": "acme/calc",
        "base_commit": "0" * 40,
        "problem_statement": "add() subtracts.",
        "FAIL_TO_PASS": '["t"]',
        "PASS_TO_PASS": "[]",
        "eval_script": "echo run",
        "log_parser": "parse_log_pytest",
        "docker_image": "namanjain12/sweb.eval.x86_64.acme__calc-1:latest",
    }
    rows = write_rows(tmp_path / "verified.jsonl", [swebench])
    assert not is_r2egym_rows(rows)
    [task] = load_tasks([rows]).tasks
    assert task.id == "acme__calc-1" and task.results == "swebench" and task.withheld == ()


def test_the_instruction_is_the_issue_inside_its_markers_else_the_whole_statement() -> None:
    assert issue_text("Write one.\n[ISSUE]\nIt breaks.\n[/ISSUE]\n") == "It breaks."
    assert issue_text("  It breaks.\n") == "It breaks."
