"""R2E-Gym rows on an image the test pushed in R2E-Gym's layout: a small Python repository at
/testbed (git history with the fix's commit in it, a .venv python with pytest), the hidden
tests at /r2e_tests and /testbed/run_tests.sh. `sprout tasks check` fails the untouched
task and passes the gold patch, as R2E-Gym's validation does; a patch that makes a test
expected to fail pass, or passes all but one test, is not resolved. The agent's checkpoint
0 and its forks hold neither hidden path; the verifier's fork holds both."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.sandbox import LayerStore, Sandbox
from sprout.tasks import base_checkpoint_of, load_tasks
from sprout.tasks.setup.image_choice import choose_task_images
from sprout.verify import run_verifier
from tests.support.python_image import python_rootfs
from tests.support.r2egym_rows import published_row
from tests.support.registry_world import Layout, Registry, tree_blob
from tests.support.requirements import require_overlay
from tests.support.rootfs import shared_libraries

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = """from calc import add, sub


def test_add():
    assert add(2, 3) == 5


def test_zero():
    assert add(0, 0) == 0


def test_not_yet():
    assert add(2, 2) == 5


class TestSub:
    def test_sub(self):
        assert sub(3, 1) == 2
"""
EXPECTED = {
    "test_add": "PASSED",
    "test_zero": "PASSED",
    "test_not_yet": "FAILED",
    "TestSub.test_sub": "PASSED",
}
RUN_TESTS = (
    "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' "
    ".venv/bin/python -W ignore -m pytest -rA r2e_tests\n"
)
PYTEST = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "attr", "attrs", "py.py")
"""Debian's python3-pytest and what it imports, copied into the image's Python."""
WRONG = "5 if (a, b) == (2, 2) else a + b"
"""A patch body that makes the test expected to fail pass."""
ALL_BUT_ONE = "a + b if a else 1"


@dataclass(frozen=True)
class Pushed:
    image: str
    parent: str
    fix: str
    diffs: dict[str, str]
    """The gold patch ("gold") and the wrong ones, as `git diff` at the parent writes them."""


def git(repo: Path, *arguments: str) -> str:
    done = subprocess.run([*GIT, "-C", str(repo), *arguments], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def add_programs(root: Path, *names: str) -> None:
    for name in names:
        program = shutil.which(name)
        if program is None:
            pytest.skip(f"{name} is needed for the image of this test")
        shutil.copy(os.path.realpath(program), root / "bin" / name)
        for library in shared_libraries(program):
            target = root / library.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(os.path.realpath(library), target)


def repository(testbed: Path) -> tuple[str, str, dict[str, str]]:
    """/testbed at the parent commit, the fix's commit later in its history (as R2E-Gym's
    images have it); (parent, fix, the diffs of each patch from the parent)."""
    (testbed / "calc.py").write_text(BUGGY)
    git(testbed.parent, "init", "--quiet", str(testbed))
    git(testbed, "add", "calc.py")
    git(testbed, "commit", "--quiet", "-m", "base")
    parent = git(testbed, "rev-parse", "HEAD")
    diffs = {}
    for name, body in (("gold", "a + b"), ("wrong", WRONG), ("all-but-one", ALL_BUT_ONE)):
        (testbed / "calc.py").write_text(BUGGY.replace("a - b", body, 1))
        diffs[name] = git(testbed, "diff") + "\n"
    (testbed / "calc.py").write_text(BUGGY.replace("a - b", "a + b", 1))
    git(testbed, "commit", "--quiet", "-am", "Fix add")
    fix = git(testbed, "rev-parse", "HEAD")
    git(testbed, "checkout", "--quiet", "--detach", parent)
    return parent, fix, diffs


@pytest.fixture(scope="module")
def pushed(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Pushed:
    """The image, pushed as namanjain12/calc_final:<fix>, as R2E-Gym names its images."""
    folder = tmp_path_factory.mktemp("r2egym")
    root = folder / "rootfs"
    python_rootfs(root)
    (root / "testbed").mkdir()
    add_programs(root, "timeout", "find")
    packages = Path("/usr/lib/python3/dist-packages")
    if not all((packages / name).exists() for name in PYTEST):
        pytest.skip("Debian's python3-pytest is needed for the image of this test")
    for name in PYTEST:
        target = root / "usr/lib/python3/dist-packages" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (packages / name).is_dir() else shutil.copy
        copy(packages / name, target)
    parent, fix, diffs = repository(root / "testbed")
    (root / "testbed/.venv/bin").mkdir(parents=True)
    (root / "testbed/.venv/bin/python").symlink_to("/bin/python3")
    (root / "testbed/run_tests.sh").write_text(RUN_TESTS)
    (root / "r2e_tests").mkdir()
    (root / "r2e_tests/test_1.py").write_text(TESTS)
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    layout = Layout(folder / "layout")
    config = {"Env": ["PATH=/testbed/.venv/bin:/usr/bin:/bin"], "WorkingDir": "/testbed"}
    layout.tag(fix, layout.image([tree_blob(root)], config=config))
    return Pushed(registry.push(layout, fix, "namanjain12/calc_final"), parent, fix, diffs)


def rows_file(path: Path, pushed: Pushed, kinds: tuple[str, ...]) -> Path:
    """One published row per patch kind: the gold one under the fix's commit, the wrong
    ones under commits of their own, all on the pushed image."""
    commits = {"gold": pushed.fix, "wrong": "c" * 40, "all-but-one": "d" * 40}
    rows = [
        published_row(
            repo_name="calc",
            image=pushed.image,
            commit_hash=commits[kind],
            parent=pushed.parent,
            diff=pushed.diffs[kind],
            expected=EXPECTED,
        )
        for kind in kinds
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.sandbox
def test_tasks_check_fails_untouched_passes_gold_and_no_wrong_patch(
    pushed: Pushed,
    pulls_removed_after: Registry,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    require_overlay()
    rows = rows_file(tmp_path / "train.jsonl", pushed, ("gold", "wrong", "all-but-one"))
    assert main(["tasks", "check", str(rows)]) == 1
    printed = capsys.readouterr().out
    lines = {line.split()[0]: line for line in printed.splitlines() if line.startswith("calc-")}
    gold, wrong, one = (lines[f"calc-{c}"] for c in (pushed.fix, "c" * 40, "d" * 40))
    assert gold.split()[1:5] == ["fail", "(3", "of", "4"] and gold.endswith("  ok"), printed
    assert "pass (4 of 4 tests)" in gold, printed
    assert "FAIL (3 of 4 tests)" in wrong, printed
    assert "oracle fails test_not_yet: expected FAILED, got PASSED" in wrong, printed
    assert "oracle fails test_zero: expected PASSED, got FAILED" in one, printed


@pytest.mark.sandbox
def test_the_hidden_tests_are_in_no_agents_fork_only_in_the_verifiers(
    pushed: Pushed, pulls_removed_after: Registry, tmp_path: Path, overlay_store: LayerStore
) -> None:
    require_overlay()
    [task] = load_tasks([rows_file(tmp_path / "train.jsonl", pushed, ("gold",))]).tasks
    [task] = choose_task_images([task], say=lambda line: None).tasks
    base = base_checkpoint_of(task, overlay_store)
    look = (
        "ls -d /r2e_tests /testbed/run_tests.sh /testbed/r2e_tests /root/r2e_tests 2>&1; "
        "find / -xdev -name test_1.py; ls /testbed; echo end"
    )
    with Sandbox.fork(overlay_store, base) as agent:
        first = agent.run(look)
        head = agent.run("git rev-parse HEAD").output.strip()
        agent.run("echo notes > /testbed/notes.txt")
        turn = agent.checkpoint()
    with Sandbox.fork(overlay_store, turn) as later:
        second = later.run(look)
    assert head == pushed.parent  # the row's old_commit_hash: where the image's repository is
    for seen in (first, second):
        lines = seen.output.splitlines()
        assert lines[:4] == [
            f"ls: cannot access '{path}': No such file or directory"
            for path in (
                "/r2e_tests",
                "/testbed/run_tests.sh",
                "/testbed/r2e_tests",
                "/root/r2e_tests",
            )
        ], seen.output
        assert "test_1.py" not in seen.output and "run_tests.sh" not in "".join(lines[4:])
        assert "calc.py" in lines

    probe = task.model_copy(
        update={"verifier_command": "ls /r2e_tests/test_1.py /testbed/run_tests.sh"}
    )
    probe = probe.model_copy(update={"results": "exit-code"})
    assert run_verifier(probe, overlay_store, turn, base).reward == 1.0
    verdict = run_verifier(task, overlay_store, turn, base)
    assert verdict.reward == 0.0
    assert "failed: test_add (expected PASSED, got FAILED)" in verdict.diagnostics.summary
    assert "PASSED r2e_tests/test_1.py::test_zero" in verdict.diagnostics.log_tail
