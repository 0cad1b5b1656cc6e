"""SWE-bench Pro's published shape, made here: a small Python repository for /app with its
history (the base commit, then the fix), rows with exactly the fields the publisher's rows
have, and a run_scripts/<instance_id>/ folder with a run script and a parser written in
the publisher's style (the parser writes {"tests": [{"name", "status"}]})."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

INSTANCE = "instance_acme__calc-0123456789abcdef0123456789abcdef01234567-vnan"
TAG = "acme.calc-acme__calc-0123456789abcdef0123456789abcdef01234567"
TEST_FILE = "tests/test_calc.py"
F2P = ["tests.test_calc.CalcTest.test_add", "tests.test_calc.CalcTest.test_mul"]
P2P = ["tests.test_calc.CalcTest.test_zero"]

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
HALF_FIXED = BUGGY.replace("a - b", "a + b")
OLD_TESTS = """import unittest

from calc import add


class CalcTest(unittest.TestCase):
    def test_zero(self):
        self.assertEqual(add(0, 0), 0)
"""
NEW_TESTS = OLD_TESTS.replace("from calc import add", "from calc import add, mul") + (
    "\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
    "\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n"
)

RUN_SCRIPT = """#!/bin/bash
set -e

run_all_tests() {
  echo "Running all tests..."
  python -m unittest discover -v -s tests -t . 2>&1
}

run_selected_tests() {
  local test_files=("$@")
  local modules=()
  for file in "${test_files[@]}"; do
    module="${file%.py}"
    modules+=("${module//\\//.}")
  done
  echo "Running selected tests: ${modules[@]}"
  python -m unittest -v "${modules[@]}" 2>&1
}

if [ $# -eq 0 ]; then
  run_all_tests
  exit $?
fi

if [[ "$1" == *","* ]]; then
  IFS=',' read -r -a TEST_FILES <<< "$1"
else
  TEST_FILES=("$@")
fi

run_selected_tests "${TEST_FILES[@]}"
"""

PARSER = '''"""Reads unittest's verbose lines from the run script's output into output.json."""

import json
import re
import sys

STATUSES = {"ok": "PASSED", "FAIL": "FAILED", "ERROR": "ERROR", "skipped": "SKIPPED"}
LINE = r"^\\w+ \\(([\\w.]+)\\) \\.\\.\\. (ok|FAIL|ERROR|skipped)"


def parse(stdout, stderr):
    tests = []
    for match in re.finditer(LINE, stdout, re.M):
        tests.append({"name": match.group(1), "status": STATUSES[match.group(2)]})
    return tests


def main(stdout_path, stderr_path, output_path):
    with open(stdout_path) as f:
        stdout = f.read()
    with open(stderr_path) as f:
        stderr = f.read()
    with open(output_path, "w") as f:
        json.dump({"tests": parse(stdout, stderr)}, f, indent=2)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("Usage: python parser.py <stdout_file> <stderr_file> <output_json>")
        sys.exit(1)
    main(sys.argv[1], sys.argv[2], sys.argv[3])
'''
CRASHING_PARSER = PARSER.replace(
    "    with open(output_path",
    '    raise RuntimeError("the parser broke")\n    with open(output_path',
)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def start_repo(repo: Path) -> None:
    """An empty repository on branch main with a tests/ folder and a committer of its own."""
    (repo / "tests").mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "config", "user.email", "dev@acme.test")
    git(repo, "config", "user.name", "dev")


def make_app(repo: Path) -> dict[str, str]:
    """The repository of the image's /app: the base commit (the bug and the old tests), the
    fix's commit on branch `fix` (the fix and the new tests), checked out at the base as the
    publisher's images are. Its base commit, fix commit, gold patch and test patch."""
    start_repo(repo)
    (repo / "calc.py").write_text(BUGGY)
    (repo / "tests/__init__.py").write_text("")
    (repo / TEST_FILE).write_text(OLD_TESTS)
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--quiet", "-b", "fix")
    (repo / "calc.py").write_text(FIXED)
    (repo / TEST_FILE).write_text(NEW_TESTS)
    git(repo, "commit", "--quiet", "-am", "fix")
    fix = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--quiet", "main")
    return {
        "base": base,
        "fix": fix,
        "patch": git(repo, "diff", base, fix, "--", "calc.py") + "\n",
        "test_patch": git(repo, "diff", base, fix, "--", "tests") + "\n",
    }


def pro_row(made: dict[str, str], **fields: object) -> dict[str, object]:
    """A row with exactly the fields SWE-bench Pro publishes, lists as Python-literal
    strings as the dataset holds them."""
    row: dict[str, object] = {
        "repo": "acme/calc",
        "instance_id": INSTANCE,
        "base_commit": made["base"],
        "patch": made["patch"],
        "test_patch": made["test_patch"],
        "problem_statement": "add() subtracts and mul() adds.",
        "requirements": "- add(a, b) returns a + b\n- mul(a, b) returns a * b",
        "interface": "No new interfaces are introduced.",
        "repo_language": "python",
        "fail_to_pass": repr(F2P),
        "pass_to_pass": repr(P2P),
        "issue_specificity": "['minor_bug']",
        "issue_categories": "['core_feat_knowledge']",
        "before_repo_set_cmd": (
            f"git reset --hard {made['base']}\ngit clean -fd\ngit checkout {made['base']}\n"
            f"git checkout {made['fix']} -- {TEST_FILE}"
        ),
        "selected_test_files_to_run": repr([TEST_FILE]),
        "dockerhub_tag": TAG,
    }
    row.update(fields)
    return row


def write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_run_scripts(folder: Path, instance: str = INSTANCE, parser: str = PARSER) -> Path:
    """run_scripts/<instance>/ with the run script and `parser`; the folder."""
    scripts = folder / instance
    scripts.mkdir(parents=True, exist_ok=True)
    (scripts / "run_script.sh").write_text(RUN_SCRIPT)
    (scripts / "parser.py").write_text(parser)
    (scripts / "instance_info.txt").write_text(f"Instance ID: {instance}\n")
    return folder
