"""SWE-bench rows over a local clone: a repository with a bug at its base commit and the
commit that fixes it, records naming them as SWE-bench's JSONL does, and files of them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

GIT = [
    "git",
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@example.com",
    "-c",
    "init.defaultBranch=main",
]
"""git with an author and a default branch of its own, whatever this machine's settings."""

OPS = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = "from calc.ops import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"
NEW_TEST = (
    "\n\ndef test_add():\n    from calc.ops import add\n\n"
    "    assert add(2, 3) == 5, 'add(2, 3) should be 5'\n"
)


def git(repo: Path, *args: str) -> str:
    """What `git ARGS` prints in `repo`, run as a user with no git settings of its own."""
    done = subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True)
    return done.stdout.decode()


def make_repo(repos: Path, folder: str = "acme__calc") -> dict[str, str]:
    """A clone with a bug at its base commit and, after it, the commit that fixes it."""
    repo = repos / folder
    (repo / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "calc" / "__init__.py").write_text("")
    (repo / "calc" / "ops.py").write_text(OPS)
    (repo / "tests" / "test_ops.py").write_text(TESTS)
    subprocess.run([*GIT, "init", "--quiet", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc" / "ops.py").write_text(OPS.replace("return a - b", "return a + b", 1))
    (repo / "tests" / "test_ops.py").write_text(TESTS + NEW_TEST)
    git(repo, "commit", "--quiet", "-am", "fix add")
    return {
        "base": base,
        "patch": git(repo, "diff", base, "HEAD", "--", "calc"),
        "test_patch": git(repo, "diff", base, "HEAD", "--", "tests"),
    }


def record(made: dict[str, str], **changes: object) -> dict[str, object]:
    """A SWE-bench row over the clone `make_repo` made (acme/calc), with `changes` to its
    fields."""
    line: dict[str, object] = {
        "instance_id": "acme__calc-1",
        "repo": "acme/calc",
        "base_commit": made["base"],
        "problem_statement": "add() subtracts instead of adding.\n",
        "test_patch": made["test_patch"],
        "patch": made["patch"],
        "FAIL_TO_PASS": json.dumps(["tests/test_ops.py::test_add"]),
        "PASS_TO_PASS": ["tests/test_ops.py::test_sub"],
        "version": "1.0",
        "environment_setup_commit": made["base"],
    }
    line.update(changes)
    return line


def write_jsonl(path: Path, lines: list[object]) -> Path:
    """A JSONL file at `path`: each of `lines` as JSON, or as it is where it is text."""
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def swebench_with_a_pipe_in_its_clone(root: Path) -> tuple[Path, Path]:
    """A SWE-bench file whose one task loads but cannot be set up: its clone's .git holds a
    named pipe, found when set-up copies the clone. Returns (the file, the repos folder)."""
    repos = root / "repos"
    made = make_repo(repos)
    os.mkfifo(repos / "acme__calc" / ".git" / "pipe")
    return write_jsonl(root / "swe.jsonl", [record(made)]), repos
