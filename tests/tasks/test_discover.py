"""load_tasks over folders of mixed formats and SWE-bench files; the --images table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sprout.task import TaskError
from sprout.tasks import load_image_table, load_tasks
from tests.support.swebench_records import make_repo, record, write_jsonl
from tests.support.taskfolders import fix_calc_task as make_native
from tests.support.taskfolders import hello_tb1_task as make_tb1


def test_a_folder_of_native_and_terminal_bench1_tasks(tmp_path: Path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    make_native(tasks)
    make_tb1(tasks)
    broken = make_tb1(tmp_path / "other", {"task.yaml": "max_test_timeout_sec: 0\n"})
    broken.rename(tasks / "broken")
    (tasks / "notes").mkdir()
    loaded = load_tasks([tasks])
    assert [task.id for task in loaded.tasks] == ["fix-calc", "hello"]
    assert loaded.errors == [
        f"broken: {tasks / 'broken' / 'task.yaml'}: instruction: expected a non-empty string, "
        "got None"
    ]
    assert [t.id for t in load_tasks([tasks / "hello"]).tasks] == ["hello"]


def test_a_row_without_the_harness_script_needs_repos(tmp_path: Path):
    made = make_repo(tmp_path / "repos")
    path = write_jsonl(tmp_path / "dev.jsonl", [record(made)])
    [error] = load_tasks([path]).errors
    assert re.search(r"dev\.jsonl:1: the row has no eval_script and log_parser .*--repos", error)


def test_a_jsonl_file_loads_each_line_and_reports_the_bad_ones(tmp_path: Path):
    made = make_repo(tmp_path / "repos")
    path = write_jsonl(
        tmp_path / "dev.jsonl",
        [record(made), record(made, repo="nobody/here"), record(made)],
    )
    loaded = load_tasks([path], repos=tmp_path / "repos")
    assert [task.id for task in loaded.tasks] == ["acme__calc-1"]
    assert loaded.errors[0].startswith(f"acme__calc-1: {path}:2: repo: no clone of nobody/here")
    assert loaded.errors[1] == f"acme__calc-1: {path}: a second task with this id; skipped"


def test_a_broken_sidecar_is_an_error_line_not_a_crash(tmp_path: Path):
    made = make_repo(tmp_path / "repos")
    path = write_jsonl(tmp_path / "dev.jsonl", [record(made)])
    (tmp_path / "dev.sprout.toml").write_text("[sprout]\nsetup = 'pip install .'\n")
    native = make_native(tmp_path / "native")
    loaded = load_tasks([path, native], repos=tmp_path / "repos")
    assert [task.id for task in loaded.tasks] == ["fix-calc"]
    assert loaded.errors == [
        f"{tmp_path / 'dev.sprout.toml'}: sprout.setup: Input should be a valid list"
    ]


def test_paths_without_tasks_are_named(tmp_path: Path):
    with pytest.raises(TaskError, match="no such file or folder"):
        load_tasks([tmp_path / "missing"])
    with pytest.raises(TaskError, match=r"no task here \(a task folder holds instruction\.md"):
        load_tasks([tmp_path])


def test_image_table_resolves_folders_against_its_own_folder(tmp_path: Path):
    (tmp_path / "rootfs" / "py311").mkdir(parents=True)
    table = tmp_path / "images.toml"
    table.write_text(f'[images]\n"python:3.11-slim" = "rootfs/py311"\nubuntu = "{tmp_path}"\n')
    assert load_image_table(table) == {
        "python:3.11-slim": str(tmp_path / "rootfs" / "py311"),
        "ubuntu": str(tmp_path),
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[images]\n"python:3.11" = 3\n',
            r'images\.toml: images\."python:3\.11": expected a folder',
        ),
        ('[images]\nubuntu = "nowhere"\n', r'images\.toml: images\."ubuntu": .*nowhere is not a'),
        ('ubuntu = "x"\n', r"images\.toml: ubuntu: unknown; the file holds one \[images\] table"),
        ("", r"images\.toml: images: missing"),
        ("[images\n", r"images\.toml: "),
    ],
)
def test_image_table_errors_name_file_and_key(tmp_path: Path, text: str, message: str):
    table = tmp_path / "images.toml"
    table.write_text(text)
    with pytest.raises(TaskError, match=message):
        load_image_table(table)
    with pytest.raises(TaskError, match="no such file"):
        load_image_table(tmp_path / "absent.toml")


def test_image_table_feeds_dockerfile_from(tmp_path: Path):
    (tmp_path / "rootfs").mkdir()
    table = tmp_path / "images.toml"
    table.write_text('[images]\n"ubuntu:24.04" = "rootfs"\n')
    task = make_tb1(tmp_path / "tasks")
    [loaded] = load_tasks([task], images=load_image_table(table)).tasks
    assert loaded.image == str(tmp_path / "rootfs") and loaded.warnings == ()
