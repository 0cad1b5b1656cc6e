"""A task whose files are bad is one error line naming the task and the file; the task next
to it still loads. Bad: not UTF-8, a folder or a pipe where a file should be, a link to
nowhere, a COPY source outside the build context, a pipe among what a build copies."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import TaskError
from sprout.tasks import base_checkpoint_of, load_swebench, load_tasks
from sprout.tasks.sources.native import load_native
from tests.support.taskfolders import calc_task, write_tb1_task

BAD_BYTES = b"line one\nline \xff two\n"


def replace_with_folder(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    path.mkdir()


def replace_with_pipe(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def replace_with_dangling_link(path: Path) -> None:
    path.unlink()
    path.symlink_to("gone")


def dockerfile(text: str) -> Callable[[Path], None]:
    def write(task: Path) -> None:
        (task / "environment" / "Dockerfile").write_text(text)

    return write


BREAKS: dict[str, tuple[Callable[[Path], None], str]] = {
    "instruction-utf8": (
        lambda t: (t / "instruction.md").write_bytes(BAD_BYTES),
        "instruction.md: not UTF-8 (line 2, column 6: byte 0xff)",
    ),
    "instruction-folder": (
        lambda t: replace_with_folder(t / "instruction.md"),
        "instruction.md: a folder, not a file",
    ),
    "instruction-link": (
        lambda t: replace_with_dangling_link(t / "instruction.md"),
        "instruction.md: a link to gone, which does not exist",
    ),
    "toml-utf8": (
        lambda t: (t / "task.toml").write_bytes(b'[sprout]\nimage = "h\xc3\x28st"\n'),
        "task.toml: not UTF-8 (line 2, column 11: byte 0xc3)",
    ),
    "toml-folder": (
        lambda t: replace_with_folder(t / "task.toml"),
        "task.toml: a folder, not a file",
    ),
    "toml-pipe": (
        lambda t: replace_with_pipe(t / "task.toml"),
        "task.toml: a named pipe, not a file",
    ),
    "dockerfile-utf8": (
        lambda t: (t / "environment" / "Dockerfile").write_bytes(b"FROM host\nRUN echo \xfe\n"),
        "environment/Dockerfile: not UTF-8 (line 2, column 10: byte 0xfe)",
    ),
    "dockerfile-folder": (
        lambda t: replace_with_folder(t / "environment" / "Dockerfile"),
        "environment/Dockerfile: a folder, not a file",
    ),
    "dockerfile-nul": (
        lambda t: (t / "environment" / "Dockerfile").write_bytes(b"FROM host\nRUN echo \0 x\n"),
        "environment/Dockerfile:2: a NUL byte; a Dockerfile is text",
    ),
    "dockerignore-folder": (
        lambda t: (t / "environment" / ".dockerignore").mkdir(),
        "environment/.dockerignore: a folder, not a file",
    ),
    "dockerignore-utf8": (
        lambda t: (t / "environment" / ".dockerignore").write_bytes(b"*.pyc\n\xff\n"),
        "environment/.dockerignore: not UTF-8 (line 2, column 1: byte 0xff)",
    ),
    "environment-file": (
        lambda t: shutil.rmtree(t / "environment") or (t / "environment").write_text(""),
        "environment: a file, not a folder",
    ),
    "solve-utf8": (
        lambda t: (t / "solution" / "solve.sh").write_bytes(b"#!/bin/bash\necho \xe9t\xe9\n"),
        "solution/solve.sh: not UTF-8 (line 2, column 6: byte 0xe9)",
    ),
    "solve-folder": (
        lambda t: replace_with_folder(t / "solution" / "solve.sh"),
        "solution/solve.sh: a folder, not a file",
    ),
    "test-sh-folder": (
        lambda t: replace_with_folder(t / "tests" / "test.sh"),
        "tests/test.sh: a folder, not a file",
    ),
    "tests-pipe": (
        lambda t: os.mkfifo(t / "tests" / "pipe"),
        "tests/pipe: a named pipe; sprout copies only files, folders and links",
    ),
    "copy-absolute": (
        dockerfile("FROM host\nWORKDIR /app\nCOPY /etc/hostname /x\n"),
        "environment/Dockerfile:3: COPY /etc/hostname: no such file in",
    ),
    "copy-parent": (
        dockerfile("FROM host\nWORKDIR /app\nCOPY ../outside /x\n"),
        "environment/Dockerfile:3: COPY ../outside: no such file in",
    ),
    "copy-link-out": (
        lambda t: (
            (t / "environment" / "host").symlink_to("/etc/hostname")
            or dockerfile("FROM host\nCOPY calc.py /app/\nCOPY host /x\n")(t)
        ),
        "environment/Dockerfile:3: COPY host: host links out of the build context "
        "(to /etc/hostname)",
    ),
    "copy-link-nowhere": (
        lambda t: (
            (t / "environment" / "gone").symlink_to("nothing-here")
            or dockerfile("FROM host\nCOPY gone /x\n")(t)
        ),
        "environment/Dockerfile:2: COPY gone: gone is a link to nothing-here, which does not exist",
    ),
    "copy-folder-through-link": (
        lambda t: (
            (t / "environment" / "etc").symlink_to("/etc")
            or dockerfile("FROM host\nCOPY etc/hostname /x\n")(t)
        ),
        "environment/Dockerfile:2: COPY etc/hostname: etc/hostname links out of the build "
        "context (to /etc/hostname)",
    ),
    "copy-pipe": (
        lambda t: (
            os.mkfifo(t / "environment" / "pipe") or dockerfile("FROM host\nADD pipe /x\n")(t)
        ),
        "environment/Dockerfile:2: ADD pipe: pipe is a named pipe; a build copies files, "
        "directories and links",
    ),
    "copy-pipe-in-folder": (
        lambda t: (
            (t / "environment" / "data").mkdir()
            or os.mkfifo(t / "environment" / "data" / "pipe")
            or dockerfile("FROM host\nCOPY . /app/\n")(t)
        ),
        "environment/Dockerfile:2: COPY .: data/pipe is a named pipe; a build copies files, "
        "directories and links",
    ),
}


@pytest.mark.parametrize("name", BREAKS)
def test_a_bad_file_is_one_error_line_and_the_next_task_loads(tmp_path: Path, name: str):
    tasks = tmp_path / "tasks"
    calc_task(tasks, "good")
    bad = calc_task(tasks, name)
    breaks, problem = BREAKS[name]
    breaks(bad)
    loaded = load_tasks([tasks])
    assert [task.id for task in loaded.tasks] == ["good"]
    assert len(loaded.errors) == 1
    assert loaded.errors[0].startswith(f"{name}: {bad}/"), loaded.errors[0]
    assert problem in loaded.errors[0]
    assert "\n" not in loaded.errors[0]


def test_an_absolute_or_climbing_source_says_where_docker_reads_it(tmp_path: Path):
    task = calc_task(tmp_path, "abs")
    context = task / "environment"
    (context / "Dockerfile").write_text("FROM host\nCOPY /etc/hostname ../../x /y/\n")
    with pytest.raises(TaskError) as caught:
        load_native(task)
    assert str(caught.value).endswith(
        "(sources are read inside the build context, as Docker reads them: /etc/hostname "
        f"is {context}/etc/hostname)"
    )
    (context / "etc").mkdir()
    (context / "etc" / "hostname").write_text("inside\n")
    with pytest.raises(TaskError, match=r"COPY \.\./\.\./x: .*: \.\./\.\./x is .*/environment/x"):
        load_native(task)
    (context / "x").write_text("")
    assert [s.source for s in load_native(task).setup] == ["etc/hostname", "x"]


def test_a_link_inside_the_context_is_followed(tmp_path: Path):
    task = calc_task(tmp_path, "linked")
    (task / "environment" / "alias.py").symlink_to("calc.py")
    (task / "environment" / "Dockerfile").write_text("FROM host\nCOPY alias.py /app/\n")
    assert [s.source for s in load_native(task).setup] == ["alias.py"]


def test_a_task_folder_whose_name_is_not_utf8_is_one_line(tmp_path: Path):
    tasks = tmp_path / "tasks"
    calc_task(tasks, "good")
    calc_task(tasks, "caf\udce9")  # the name's byte 0xe9, as the file system gives it
    loaded = load_tasks([tasks])
    assert [task.id for task in loaded.tasks] == ["good"]
    (error,) = loaded.errors
    assert error.startswith("caf\\udce9: ") and "is not UTF-8; rename it" in error
    error.encode("utf-8")  # printable as it is


# --- Terminal-Bench 1 folders ---------------------------------------------------------------

TB1 = {
    "task.yaml": "instruction: Say hello.\nparser_name: pytest\n",
    "Dockerfile": "FROM host\nWORKDIR /app\n",
    "run-tests.sh": "exit 0\n",
    "solution.sh": "echo hello\n",
}


@pytest.mark.parametrize(
    ("file", "breaks", "problem"),
    [
        ("task.yaml", lambda p: p.write_bytes(b"instruction: \xff\n"), "not UTF-8"),
        ("task.yaml", replace_with_folder, "a folder, not a file"),
        ("Dockerfile", lambda p: p.write_bytes(b"FROM host\n\xc0\n"), "not UTF-8 (line 2"),
        ("run-tests.sh", replace_with_folder, "a folder, not a file"),
        ("run-tests.sh", lambda p: p.write_bytes(b"\xff"), "not UTF-8 (column 1: byte 0xff)"),
        ("solution.sh", lambda p: p.write_bytes(b"echo \xff\n"), "not UTF-8"),
        ("sprout.toml", lambda p: p.mkdir(), "a folder, not a file"),
        ("docker-compose.yaml", lambda p: p.write_bytes(b"services: \xff\n"), "not UTF-8"),
        ("tests/pipe", os.mkfifo, "a named pipe; sprout copies only files"),
    ],
)
def test_terminal_bench1_bad_files_are_one_line(
    tmp_path: Path, file: str, breaks: Callable[[Path], None], problem: str
):
    write_tb1_task(tmp_path, "good", TB1)
    bad = write_tb1_task(tmp_path, "bad", TB1)
    breaks(bad / file)
    loaded = load_tasks([tmp_path])
    assert [task.id for task in loaded.tasks] == ["good"]
    (error,) = loaded.errors
    assert error.startswith(f"bad: {bad / file}: {problem}"), error


# --- SWE-bench JSONL --------------------------------------------------------------------------


def test_swebench_lines_that_are_not_utf8_or_hold_half_a_surrogate_pair(tmp_path: Path):
    (tmp_path / "repos").mkdir()
    path = tmp_path / "tasks.jsonl"
    surrogate = json.dumps({"instance_id": "acme-1", "problem_statement": "\ud800"})
    named = json.dumps({"instance_id": "\udcff", "repo": "acme/calc"})
    path.write_bytes(
        b'{"instance_id": "a\xffb"}\n' + surrogate.encode() + b"\n" + named.encode() + b"\n"
    )
    errors = load_swebench(path, repos=tmp_path / "repos")
    assert [str(error) for error in errors] == [
        f"?: {path}:1: not UTF-8 (column 19: byte 0xff)",
        f"acme-1: {path}:2: problem_statement: not valid Unicode (a \\u escape of half a "
        "surrogate pair, which no UTF-8 text can hold)",
        f"?: {path}:3: instance_id: not valid Unicode (a \\u escape of half a surrogate "
        "pair, which no UTF-8 text can hold)",
    ]


@pytest.mark.parametrize(
    ("breaks", "problem"),
    [
        (lambda p: p.mkdir(), "a folder, not a file"),
        (lambda p: p.write_bytes(b"[sprout]\nimage = '\xff'\n"), "not UTF-8 (line 2"),
    ],
)
def test_a_bad_swebench_sidecar_is_one_line_and_other_paths_load(
    tmp_path: Path, breaks: Callable[[Path], None], problem: str
):
    (tmp_path / "repos").mkdir()
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n")
    breaks(tmp_path / "tasks.sprout.toml")
    good = calc_task(tmp_path / "native", "good")
    loaded = load_tasks([path, good], repos=tmp_path / "repos")
    assert [task.id for task in loaded.tasks] == ["good"]
    (error,) = loaded.errors
    assert error.startswith(f"{tmp_path / 'tasks.sprout.toml'}: {problem}")


# --- at set-up: what changed after the task loaded, and links inside copied folders --------


@pytest.mark.sandbox
def test_links_inside_a_copied_folder_are_copied_as_links(
    overlay_store: LayerStore, tmp_path: Path
):
    (tmp_path / "secret").write_text("host secret\n")
    task = calc_task(tmp_path, "links")
    data = task / "environment" / "data"
    data.mkdir()
    (data / "out").symlink_to(tmp_path / "secret")
    (data / "up").symlink_to("../../../secret")
    (data / "calc").symlink_to("../calc.py")
    (task / "environment" / "Dockerfile").write_text("FROM host\nCOPY data /app/data\n")
    base = base_checkpoint_of(load_native(task), overlay_store)
    with Sandbox.fork(overlay_store, base) as sandbox:
        seen = sandbox.run(
            "cd /app/data && for f in out up calc; do printf '%s ' $f; readlink $f; done; "
            "cat out up 2>&1 | grep -c 'host secret' || true"
        )
    lines = seen.output.splitlines()
    assert lines[:3] == [f"out {tmp_path / 'secret'}", "up ../../../secret", "calc ../calc.py"]
    assert lines[3] == "0", "the links were copied, not what they point to"


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda c: (c / "calc.py").unlink(), "no such file in"),
        (
            lambda c: (c / "calc.py").unlink() or (c / "calc.py").symlink_to("/etc/hostname"),
            "calc.py links out of the build context (to /etc/hostname)",
        ),
        (
            lambda c: (c / "calc.py").unlink() or os.mkfifo(c / "calc.py"),
            "calc.py is a named pipe",
        ),
    ],
)
def test_a_context_that_changed_after_loading_is_a_set_up_error_naming_the_line(
    overlay_store: LayerStore,
    tmp_path: Path,
    change: Callable[[Path], None],
    problem: str,
):
    task = load_native(calc_task(tmp_path, "changed"))
    change(task.path / "environment")
    with pytest.raises(TaskError) as caught:
        base_checkpoint_of(task, overlay_store)
    message = str(caught.value)
    assert message.startswith(
        "changed: set-up step 1 at environment/Dockerfile:3 ('COPY calc.py /app/'): "
    ), message
    assert problem in message


@pytest.mark.sandbox
def test_a_pipe_in_a_copied_clone_is_a_set_up_error(overlay_store: LayerStore, tmp_path: Path):
    task = calc_task(tmp_path, "piped")
    context = task / "environment"
    (context / "data").mkdir()
    (context / "Dockerfile").write_text("FROM host\nCOPY data /data\n")
    loaded = load_native(task)
    os.mkfifo(context / "data" / "pipe")  # after loading, as a SWE-bench clone may hold one
    with pytest.raises(TaskError, match=r"data/pipe is a named pipe; a build copies files"):
        base_checkpoint_of(loaded, overlay_store)
