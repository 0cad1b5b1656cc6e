"""SWE-bench JSONL over a local clone: records, sidecar, bad lines, and the verifier end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import Task, TaskError
from sprout.tasks import base_checkpoint_of, load_swebench
from sprout.tasks.sources.swebench import COPIED_CLONE, patch_files
from sprout.tasks.sources.swebench_rows import apply_command
from tests.support.rootfs import build_rootfs, shared_libraries
from tests.support.swebench_records import GIT, git, make_repo, record, write_jsonl


@pytest.fixture
def made(tmp_path: Path) -> dict[str, str]:
    return make_repo(tmp_path / "repos")


def only_task(path: Path, repos: Path) -> Task:
    [task] = load_swebench(path, repos=repos)
    assert isinstance(task, Task), task
    return task


def test_a_record_becomes_a_task(tmp_path: Path, made: dict[str, str]):
    task = only_task(write_jsonl(tmp_path / "dev.jsonl", [record(made)]), tmp_path / "repos")
    assert task.id == "acme__calc-1"
    assert task.instruction == "add() subtracts instead of adding."
    assert task.workdir == "/testbed" and task.image == "host"
    assert task.results == "pytest"
    assert task.required_tests == ("tests/test_ops.py::test_add", "tests/test_ops.py::test_sub")
    assert task.test_files["test.patch"] == made["test_patch"]
    script = task.test_files["test.sh"]
    assert f"git checkout --quiet {made['base']} -- tests/test_ops.py" in script
    assert "python3 -m pytest -rA --rootdir=/testbed" in script
    assert script.rstrip().endswith("tests/test_ops.py")
    copy, checkout = task.setup
    assert copy.kind == "copy" and task.environment_dir == tmp_path / "repos" / "acme__calc"
    assert str(tmp_path / "repos" / "acme__calc") in checkout.command
    assert made["test_patch"] not in checkout.command
    [step] = task.solution
    assert step.command.startswith("git apply --verbose <<'SPROUT_PATCH'\n")


def test_clones_are_found_under_each_layout(tmp_path: Path):
    for layout in ("calc", "acme/calc"):
        repos = tmp_path / layout.replace("/", "_") / "repos"
        made = make_repo(repos, layout)
        path = write_jsonl(tmp_path / "dev.jsonl", [record(made)])
        assert str(repos / layout) in only_task(path, repos).setup[1].command


def test_sidecar_sets_defaults_and_per_repository_fields(tmp_path: Path, made: dict[str, str]):
    (tmp_path / "dev.sprout.toml").write_text(
        '[sprout]\nsetup = ["echo all"]\nnetwork = false\nverifier_timeout_sec = 30\n'
        '[repos."acme/calc"]\nsetup = ["pip install -e ."]\npytest = "/usr/bin/python3 -m pytest"\n'
        '[repos."acme/calc@1.0"]\nenv = { MODE = "one" }\n'
    )
    task = only_task(write_jsonl(tmp_path / "dev.jsonl", [record(made)]), tmp_path / "repos")
    assert [s.command for s in task.setup[2:]] == ["pip install -e ."]
    assert task.env == {"MODE": "one"} and task.setup[2].env == {"MODE": "one"}
    assert task.network is False and task.verifier_timeout_s == 30
    assert "/usr/bin/python3 -m pytest -rA" in task.test_files["test.sh"]


def test_an_image_from_the_images_table_gets_a_copy_of_the_clone(tmp_path, made):
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    (tmp_path / "dev.sprout.toml").write_text('[sprout]\nimage = "python:3.11"\n')
    path = write_jsonl(tmp_path / "dev.jsonl", [record(made)])
    [task] = load_swebench(path, repos=tmp_path / "repos", images={"python:3.11": str(rootfs)})
    assert isinstance(task, Task) and task.image == str(rootfs)
    copy, checkout = task.setup
    assert (copy.kind, copy.source, copy.destination) == ("copy", ".git", COPIED_CLONE)
    assert task.environment_dir == tmp_path / "repos" / "acme__calc"
    assert COPIED_CLONE in checkout.command and checkout.command.endswith(f"rm -rf {COPIED_CLONE}")


@pytest.mark.parametrize(
    ("sidecar", "message"),
    [
        ("[sprout]\nnetwork = 'no'\n", r"dev\.sprout\.toml: sprout\.network: Input should be"),
        ('[repos."acme/calc"]\nimagee = "x"\n', r'repos\."acme/calc"\.imagee: Extra inputs'),
        (
            '[repos."acme/calc"]\nimage = "No where"\n',
            r'repos\."acme/calc"\.image: image \'No where\': not an image reference',
        ),
        ("[spout]\n", r"spout: unknown; use \[sprout\] or \[repos"),
    ],
)
def test_a_bad_sidecar_is_one_error_naming_it(tmp_path, made, sidecar, message):
    (tmp_path / "dev.sprout.toml").write_text(sidecar)
    with pytest.raises(TaskError, match=message):
        load_swebench(write_jsonl(tmp_path / "dev.jsonl", [record(made)]), repos=tmp_path / "repos")


def test_bad_lines_name_file_line_instance_and_field(tmp_path: Path, made: dict[str, str]):
    missing = record(made)
    del missing["problem_statement"]
    lines: list[object] = [
        "",
        "{not json",
        missing,
        record(made, instance_id="no-patch", test_patch=None),
        record(made, instance_id="bad-f2p", FAIL_TO_PASS="test_add"),
        record(made, instance_id="f2p-number", FAIL_TO_PASS=5),
        record(made, instance_id="elsewhere", repo="acme/other"),
        record(made, instance_id="short", base_commit=made["base"][:7]),
        [1, 2],
    ]
    path = write_jsonl(tmp_path / "dev.jsonl", lines)
    with path.open("ab") as handle:
        handle.write(b'{"instance_id": "\xff"}\n' + json.dumps(record(made)).encode() + b"\n")
    *errors, task = load_swebench(path, repos=tmp_path / "repos")
    assert isinstance(task, Task) and task.id == "acme__calc-1"
    assert all(isinstance(error, TaskError) for error in errors)
    expected = [
        f"?: {path}:2: not valid JSON",
        f"acme__calc-1: {path}:3: problem_statement: Field required",
        f"no-patch: {path}:4: test_patch: Input should be a valid string",
        f"bad-f2p: {path}:5: FAIL_TO_PASS: Value error, expected a list",
        f"f2p-number: {path}:6: FAIL_TO_PASS: Value error, expected a list",
        f"elsewhere: {path}:7: repo: no clone of acme/other in {tmp_path / 'repos'}",
        f"short: {path}:8: base_commit: String should match pattern",
        f"?: {path}:9: expected a JSON object, got list",
        f"?: {path}:10: not UTF-8",
    ]
    assert len(errors) == len(expected)
    for error, start in zip(errors, expected, strict=True):
        assert str(error).startswith(start), error


def test_patch_files_reads_headers_only():
    patch = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n"
        "+diff --git a/not b/real\n"
        "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n"
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n"
        "diff --git a/old.py b/moved.py\nsimilarity index 100%\nrename from old.py\n"
        "rename to moved.py\n"
    )
    assert patch_files(patch) == [
        ("a.py", "a.py"),
        (None, "new.py"),
        ("gone.py", None),
        ("old.py", "moved.py"),
    ]


def test_a_patch_with_markdown_fences_is_applied_from_base64(tmp_path: Path):
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "README.md").write_text("# r\n```python\nprint(1)\n```\n")
    subprocess.run([*GIT, "init", "--quiet", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "one")
    (repo / "README.md").write_text("# r\n```python\nprint(2)\n```\n")
    patch = git(repo, "diff")
    git(repo, "checkout", "--quiet", "README.md")
    command = apply_command(patch)
    assert "base64 -d" in command and "```" not in command
    subprocess.run(["sh", "-c", command], cwd=repo, check=True, capture_output=True)
    assert "print(2)" in (repo / "README.md").read_text()


@pytest.mark.sandbox
def test_oracle_passes_the_untouched_repository_fails(
    overlay_store: LayerStore, tmp_path: Path, made: dict[str, str]
):
    from sprout.verify import run_verifier

    task = only_task(write_jsonl(tmp_path / "dev.jsonl", [record(made)]), tmp_path / "repos")
    base = base_checkpoint_of(task, overlay_store)
    with Sandbox.fork(overlay_store, base) as sandbox:
        seen = sandbox.run("pwd; git log --all --format=%s; git status --porcelain; ls /tests")
    assert seen.output.splitlines()[:2] == ["/testbed", "base"]  # no later commit, clean tree
    assert "No such file" in seen.output

    untouched = run_verifier(task, overlay_store, base, base)
    assert untouched.reward == 0
    assert "tests/test_ops.py::test_add" in untouched.diagnostics.summary
    assert untouched.diagnostics.passed == 1 and untouched.diagnostics.failed == 1

    with Sandbox.fork(overlay_store, base) as sandbox:
        for step in task.solution:
            assert sandbox.run(step.command).exit_code == 0
        solved = sandbox.checkpoint()
    verdict = run_verifier(task, overlay_store, solved, base)
    assert verdict.reward == 1, verdict.diagnostics.summary
    assert verdict.diagnostics.required_missing == ()
    assert "+    return a + b" in verdict.patch

    for layer in (base, solved):
        assert overlay_store.read(layer, "/tests/test.patch") is None
        assert overlay_store.read(layer, "/tests/test.sh") is None
        assert b"test_add" not in (overlay_store.read(layer, "/testbed/tests/test_ops.py") or b"")


@pytest.mark.sandbox
def test_a_root_filesystem_image_checks_out_a_copy_of_the_clone(
    overlay_store: LayerStore, tmp_path: Path, made: dict[str, str]
):
    rootfs = tmp_path / "rootfs"
    build_rootfs(rootfs)
    program = shutil.which("git")
    assert program is not None
    shutil.copy(os.path.realpath(program), rootfs / "bin" / "git")
    for library in shared_libraries(program):
        target = rootfs / library.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.realpath(library), target)
    (tmp_path / "dev.sprout.toml").write_text(f'[sprout]\nimage = "{rootfs}"\n')
    task = only_task(write_jsonl(tmp_path / "dev.jsonl", [record(made)]), tmp_path / "repos")
    base = base_checkpoint_of(task, overlay_store)
    with Sandbox.fork(overlay_store, base) as sandbox:
        seen = sandbox.run(f"git log --all --format=%s; ls; ls {COPIED_CLONE} {tmp_path} 2>&1")
    lines = seen.output.splitlines()
    assert lines[:3] == ["base", "calc", "tests"]
    assert all("No such file" in line for line in lines[3:]) and len(lines) == 5


@pytest.mark.sandbox
def test_a_commit_missing_from_the_clone_is_named(
    overlay_store: LayerStore, tmp_path: Path, made: dict[str, str]
):
    line = record(made, base_commit="0" * 40)
    task = only_task(write_jsonl(tmp_path / "dev.jsonl", [line]), tmp_path / "repos")
    with pytest.raises(
        TaskError, match=r"acme__calc-1: set-up step 2 .*0{40} is not in .*fetch it"
    ):
        base_checkpoint_of(task, overlay_store)
