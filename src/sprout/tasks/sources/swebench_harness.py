"""The eval script of SWE-bench's harness for a Python repository, as the forks that
datasets were published with build it (SWE-rebench V1's, SWE-Gym's): both sources write
their rows' scripts here, each with its fork's few differences.

In /testbed with the `testbed` conda environment active: the specification's eval
commands, a record of the repository's state, its install command, the files the test
patch touches reset to the base commit, the test patch applied, the test command over the
test files (between the harness's markers where the fork has them), the files reset
again. Written from the harness's description; nothing of it is copied.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from sprout.task import GitHistory, SolutionStep, SweBenchGrading, Task
from sprout.tasks.sources.swebench import patch_files
from sprout.tasks.sources.swebench_rows import EVAL_SCRIPT, VERIFIER_TIMEOUT_S, apply_command

WORKDIR = "/testbed"
ENVIRONMENT = "testbed"
HEREDOC = "EOF_114329324912"
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
NON_TEST_SUFFIXES = (
    ".json",
    ".png",
    "csv",
    ".txt",
    ".md",
    ".jpg",
    ".jpeg",
    ".pkl",
    ".yml",
    ".yaml",
    ".toml",
)
"""Changed files that are no test to run (SWE-bench's list, `csv` without its dot)."""


@dataclass(frozen=True)
class Fork:
    """What one fork does its own way."""

    markers: bool
    """The test command between the start and end markers (SWE-rebench's; 2.0 had none)."""
    locale: str
    """Put before the install and test commands (SWE-rebench's `LANG=C.UTF-8 ...`)."""
    diff: str
    """The record of the working tree's changes (`git diff` with its options)."""
    removed_are_tests: bool
    """Whether a file the test patch deletes is still named to the test command (2.0's
    reading of the patch's headers names every file)."""


def test_directives(repo: str, test_patch: str, fork: Fork) -> list[str]:
    """The test files the command runs, as the harness picks them from the test patch;
    Django's as dotted module names under tests/."""
    files = [
        new if new is not None else old
        for old, new in patch_files(test_patch)
        if new is not None or fork.removed_are_tests
    ]
    tests = [path for path in files if path and not path.endswith(NON_TEST_SUFFIXES)]
    if repo == "django/django":
        return [_django_module(path) for path in tests]
    return tests


def _django_module(path: str) -> str:
    path = path.removesuffix(".py")
    return path.removeprefix("tests/").replace("/", ".")


def eval_script(
    *,
    fork: Fork,
    base_commit: str,
    test_patch: str,
    test_command: str,
    install: str | None,
    eval_commands: list[str],
) -> str:
    """The instance's eval script; `test_command` with its test files already."""
    touched = [old for old, _ in patch_files(test_patch) if old is not None]
    reset = f"git checkout {base_commit} {' '.join(touched)}"
    activate = ["source /opt/miniconda3/bin/activate", f"conda activate {ENVIRONMENT}"]
    test = [f": '{START}'", fork.locale + test_command, f": '{END}'"]
    commands = [
        *activate,
        f"cd {WORKDIR}",
        *eval_commands,
        f"git config --global --add safe.directory {WORKDIR}",
        f"cd {WORKDIR}",
        "git status",
        "git show",
        f"{fork.diff} {base_commit}",
        *activate,
        *([fork.locale + install] if install is not None else []),
        reset,
        f"git apply -v - <<'{HEREDOC}'\n{test_patch}\n{HEREDOC}",
        *(test if fork.markers else test[1:2]),
        reset,
    ]
    return "\n".join(["#!/bin/bash", "set -uxo pipefail", *commands]) + "\n"


def harness_task(
    *,
    path: Path,
    instruction: str,
    image: str,
    patch: str | None,
    script: str,
    grading: SweBenchGrading,
    base_commit: str,
) -> Task:
    """A row's task on its image in /testbed: the gold patch as the oracle's one turn, the
    eval script on the verifier's fork only, its output graded by `grading`."""
    return Task(
        id=grading.instance_id,
        path=path,
        instruction=instruction.strip(),
        image=image,
        workdir=WORKDIR,
        solution=(SolutionStep(command=apply_command(patch)),) if patch else (),
        test_files={EVAL_SCRIPT: script},
        verifier_command=f"bash /tests/{EVAL_SCRIPT} > {shlex.quote(grading.log)} 2>&1",
        verifier_timeout_s=VERIFIER_TIMEOUT_S,
        results="swebench",
        swebench=grading,
        git_history=GitHistory(repo=WORKDIR, base_commit=base_commit),
    )
