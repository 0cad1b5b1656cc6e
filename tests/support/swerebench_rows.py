"""SWE-rebench V2's published shape, made here: a small shell repository for /calc with its
history (the base commit, then the fix), a test runner of its own that prints automake's
`PASS: name` / `FAIL: name` lines (which the publisher's `parse_log_jq` reads), and rows
with exactly the fields the publisher's rows have."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.swebench_pro_rows import git, start_repo

INSTANCE = "acme__calc-7"
REPO = "acme/calc"
F2P = ["t_add.sh", "t_mul.sh"]
P2P = ["t_sub.sh"]

BUGGY = "add() { echo $(($1 - $2)); }\nmul() { echo $(($1 + $2)); }\nsub() { echo $(($1 - $2)); }\n"
FIXED = BUGGY.replace("add() { echo $(($1 - $2)); }", "add() { echo $(($1 + $2)); }").replace(
    "mul() { echo $(($1 + $2)); }", "mul() { echo $(($1 * $2)); }"
)
HALF_FIXED = FIXED.replace("mul() { echo $(($1 * $2)); }", "mul() { echo $(($1 + $2)); }")
RUNNER = """\
# the repository's own test runner: each tests/t_*.sh, one automake line each
. ./calc.sh
failed=0
for test in tests/t_*.sh; do
  name=${test#tests/}
  if ( . "$test" ) > /dev/null 2>&1; then echo "PASS: $name"; else echo "FAIL: $name"; failed=1; fi
done
echo "# the runner's summary: failed=$failed"
exit $failed
"""
PYTEST_STYLE_RUNNER = """\
# the same tests, reported as pytest -rA reports them: one `STATUS name` line each
. ./calc.sh
for test in tests/t_*.sh; do
  name=${test#tests/}
  if ( . "$test" ) > /dev/null 2>&1; then echo "PASSED $name"; else echo "FAILED $name"; fi
done
"""
TESTS = {
    "t_sub.sh": '[ "$(sub 5 3)" = 2 ]\n',
    "t_add.sh": '[ "$(add 2 3)" = 5 ]\n',
    "t_mul.sh": '[ "$(mul 2 3)" = 6 ]\n',
}


INSTALL_CONFIG: dict[str, object] = {
    "base_image_name": "c:latest",
    "docker_specs": None,
    "install": ["true"],
    "log_parser": "parse_log_jq",
    "log_parsers": None,
    "test_cmd": ["bash tests/run.sh"],
}


def make_repo(repo: Path) -> dict[str, str]:
    """The repository of the image's /calc: the base commit (the bug, the runner and the old
    test), the fix's commit on branch `fix` (the fix and two new tests), checked out at the
    base. Its base commit, fix commit, gold patch and test patch."""
    start_repo(repo)
    (repo / "calc.sh").write_text(BUGGY)
    (repo / "tests/run.sh").write_text(RUNNER)
    (repo / "tests/run_pytest_style.sh").write_text(PYTEST_STYLE_RUNNER)
    (repo / "tests/t_sub.sh").write_text(TESTS["t_sub.sh"])
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--quiet", "-b", "fix")
    (repo / "calc.sh").write_text(FIXED)
    for name in F2P:
        (repo / "tests" / name).write_text(TESTS[name])
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "fix")
    fix = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--quiet", "main")
    return {
        "base": base,
        "fix": fix,
        "patch": git(repo, "diff", base, fix, "--", "calc.sh") + "\n",
        "test_patch": git(repo, "diff", base, fix, "--", "tests") + "\n",
    }


def rebench_row(made: dict[str, str], **fields: object) -> dict[str, object]:
    """A row with exactly the fields SWE-rebench V2 publishes (its sample's), the test lists
    as lists and `install_config` as an object, as the dataset holds them."""
    row: dict[str, object] = {
        "base_commit": made["base"],
        "created_at": 1609298073000,
        "instance_id": INSTANCE,
        "meta": "{'llm_metadata': [{'code': 'A', 'difficulty': 'easy'}]}",
        "patch": made["patch"],
        "pr_description": "Fix add and mul\n* fixes #6",
        "problem_statement": "add() subtracts and mul() adds.",
        "repo": REPO,
        "test_patch": made["test_patch"],
        "language": "shell",
        "interface": "",
        "PASS_TO_PASS": list(P2P),
        "FAIL_TO_PASS": list(F2P),
        "install_config": dict(INSTALL_CONFIG),
        "image_name": made.get("image", "docker.io/swerebenchv2/acme-calc:7-" + made["base"][:7]),
    }
    row.update(fields)
    return row


def write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


V1_INSTANCE = "acme__calc-12"
V1_CONFIG: dict[str, object] = {
    "env_vars": None,
    "env_yml_path": None,
    "install": "true",
    "log_parser": "parse_log_pytest",
    "no_use_env": None,
    "packages": "requirements.txt",
    "pip_packages": ["pytest"],
    "pre_install": None,
    "python": "3.9",
    "reqs_path": ["requirements.txt"],
    "test_cmd": "bash tests/run_pytest_style.sh",
}


def v1_row(made: dict[str, str], **fields: object) -> dict[str, object]:
    """A row with exactly the fields SWE-rebench (V1) publishes: SWE-bench's, its harness
    specification in `install_config`, and the publisher's labels."""
    row: dict[str, object] = {
        "instance_id": V1_INSTANCE,
        "base_commit": made["base"],
        "created_at": "2024-05-01T10:00:00Z",
        "environment_setup_commit": made["base"],
        "hints_text": "",
        "patch": made["patch"],
        "problem_statement": "add() subtracts and mul() adds.",
        "repo": REPO,
        "test_patch": made["test_patch"],
        "meta": {"num_modified_files": 1, "has_test_patch": True},
        "version": "0.1",
        "install_config": dict(V1_CONFIG),
        "requirements": "",
        "environment": "",
        "FAIL_TO_PASS": json.dumps(F2P),
        "PASS_TO_PASS": json.dumps(P2P),
        "license_name": "MIT License",
    }
    row.update(fields)
    return row


GYM_INSTANCE = "acme__calc-21"
GYM_CONSTANTS = """\
# the fork's specification tables, in its shape: repository -> version -> specification
MAP_REPO_VERSION_TO_SPECS = {
    "acme/calc": {"0.1": {"python": "3.9", "install": "true",
                          "test_cmd": "bash tests/run_pytest_style.sh"}},
    "acme/other": {"0.1": {"python": "3.9", "test_cmd": "pytest -rA"}},
}
"""
GYM_PARSERS = """\
# the fork's parsers module reads its constants module, as the fork's does
from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS


def parse_log_pytest(log):
    return {}


def parse_log_private(log):
    return {}


MAP_REPO_TO_PARSER = {"acme/calc": parse_log_pytest, "acme/other": parse_log_private}
"""


def write_gym_fork(folder: Path) -> Path:
    """A checkout in the layout of SWE-Gym's fork of SWE-bench, holding tables of the
    test's own: the folder."""
    harness = folder / "swebench" / "harness"
    harness.mkdir(parents=True)
    (harness / "constants.py").write_text(GYM_CONSTANTS)
    (harness / "log_parsers.py").write_text(GYM_PARSERS)
    return folder


def gym_row(made: dict[str, str], **fields: object) -> dict[str, object]:
    """A row with exactly the fields SWE-Gym publishes (SWE-bench's, no image)."""
    row: dict[str, object] = {
        "instance_id": GYM_INSTANCE,
        "hints_text": "",
        "patch": made["patch"],
        "test_patch": made["test_patch"],
        "created_at": "2024-02-19 20:29:03",
        "problem_statement": "add() subtracts and mul() adds.",
        "repo": REPO,
        "base_commit": made["base"],
        "version": "0.1",
        "PASS_TO_PASS": list(P2P),
        "FAIL_TO_PASS": list(F2P),
    }
    row.update(fields)
    return row
