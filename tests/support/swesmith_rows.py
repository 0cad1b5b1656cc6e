"""SWE-smith's published shape, made here: a small shell repository for /testbed at its
clean commit, a stand-in for the `pytest` its profile runs (a shell script printing pytest's
verbose lines), the bug as a patch, and rows with exactly the fields SWE-smith publishes.
The repository is graded by a real profile of SWE-smith's registry (oauthlib's, whose test
command runs the whole suite), in the interpreter that has the swesmith package."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.repo_paths import REPO
from tests.support.swebench_pro_rows import git, start_repo

MIRROR = "swesmith/oauthlib__oauthlib.1fd52536"
IMAGE = "jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536"
INSTANCE = "oauthlib__oauthlib.1fd52536.func_pm_op_swap__q2b7k1"
F2P = ["tests/test_ops.py::test_add", "tests/test_ops.py::test_mul"]
P2P = ["tests/test_sub.py::test_sub"]
CLEAN = "add() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\nsub() { echo $(($1 - $2)); }\n"
BUGGY = CLEAN.replace("$1 + $2", "$1 - $2").replace("$1 * $2", "$1 + $2")
HALF_FIXED = BUGGY.replace("add() { echo $(($1 - $2)); }", "add() { echo $(($1 + $2)); }")
TESTS = {
    "tests/test_ops.py": "test_add|add 2 3|5\ntest_mul|mul 2 3|6\n",
    "tests/test_sub.py": "test_sub|sub 5 3|2\n",
}
PYTEST_STAND_IN = """\
#!/bin/bash
# pytest, as far as the profile's log parser reads it: one verbose line per test
cd /testbed && . ./calc.sh
for file in tests/test_*.py; do
  while IFS='|' read -r name call expected; do
    [ -n "$name" ] || continue
    if [ "$(eval "$call")" = "$expected" ]; then verdict=PASSED; else verdict=FAILED; fi
    echo "$file::$name $verdict"
  done < "$file"
done
"""


def swesmith_python() -> str:
    """The interpreter with the swesmith package that `make test` installs, or the one
    SPROUT_SWESMITH_PYTHON names; the test skips without one."""
    named = os.environ.get("SPROUT_SWESMITH_PYTHON") or str(REPO / ".venv-swesmith/bin/python")
    if not Path(named).is_file():
        pytest.skip("no Python with swesmith: `make swesmith-venv` installs one")
    return named


def make_clean_repo(repo: Path) -> dict[str, str]:
    """The repository at SWE-smith's clean commit, and the bug as SWE-smith's `patch`."""
    start_repo(repo)
    (repo / "calc.sh").write_text(CLEAN)
    for name, text in TESTS.items():
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "Initial commit")
    (repo / "calc.sh").write_text(BUGGY)
    bug = git(repo, "diff") + "\n"
    git(repo, "checkout", "--quiet", "--", "calc.sh")
    return {"patch": bug}


def smith_row(made: dict[str, str], **fields: object) -> dict[str, object]:
    """A row with exactly the fields SWE-smith publishes."""
    row: dict[str, object] = {
        "instance_id": INSTANCE,
        "repo": MIRROR,
        "patch": made["patch"],
        "FAIL_TO_PASS": list(F2P),
        "PASS_TO_PASS": list(P2P),
        "created_at": "2025-03-14T20:52:14.587436",
        "image_name": made.get(
            "image", "jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536"
        ),
        "base_commit": "0" * 40,
        "problem_statement": "add() subtracts and mul() adds.",
    }
    row.update(fields)
    return row


def write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path
