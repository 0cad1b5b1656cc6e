"""SWE-smith rows as published (`SWE-bench/SWE-smith`; JSONL or parquet), on SWE-smith's
images and graded by SWE-smith's own harness code.

A row names its repository by SWE-smith's mirror (`swesmith/<owner>__<repo>.<sha8>`), its
image (`image_name`), the bug it plants (`patch`, which SWE-smith's harness also uses as
the gold patch, applied in reverse) and its tests. The test command, the test files of an
instance and the log parser are methods of the repository's profile in SWE-smith's
registry (`swesmith.profiles`), a package that needs a `swebench` of its own: sprout runs it
in the interpreter named by `--swe-smith PYTHON` (`child_python`), at load for the command
and the files, and again on the verifier's log (`sprout.verify.swesmith_grading`).

SWE-smith's agents start on a branch of the mirror that holds the bug commit and a commit
taking the FAIL_TO_PASS test files out, on top of the clean commit: `git show HEAD~1` hands
them the fix, inverted. Checkpoint 0 here is that tree with no such history: the image's
repository with the bug applied, committed as the only commit of a fresh history, the
FAIL_TO_PASS test files left out of it and withheld (`Task.withheld`) until the verifier's
fork, where the evaluation puts the PASS_TO_PASS test files back as committed and runs the
test command between SWE-smith's markers.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sprout.task import SetupStep, SolutionStep, SweSmithGrading, Task, TaskError
from sprout.tasks.imageref import image_reference
from sprout.tasks.sources.child_python import ChildFailed, run_child
from sprout.tasks.sources.rows import field_problem, instance_tasks, name_list, rows
from sprout.tasks.sources.swebench_rows import apply_command

WORKDIR = "/testbed"
EVAL_SCRIPT = "eval.sh"
VERIFIER_TIMEOUT_S = 1800.0
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
PROFILES = """
import json, sys
from swesmith.profiles import registry
answers = []
for instance in json.load(sys.stdin):
    try:
        profile = registry.get_from_inst(instance)
        command, _ = profile.get_test_cmd(instance)
        f2p, p2p = profile.get_test_files(instance)
        answers.append({"test_cmd": command, "f2p_files": [str(f) for f in f2p],
                        "p2p_files": [str(f) for f in p2p], "profile": type(profile).__name__})
    except Exception as error:
        answers.append({"error": f"{type(error).__name__}: {error}"})
json.dump(answers, sys.stdout)
"""
"""Run in the swesmith interpreter: each instance's test command and test files, by its
repository's profile (or what went wrong, per instance)."""


class SmithRow(BaseModel):
    """The published fields sprout reads (created_at is the publisher's)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    instance_id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    repo: str = Field(pattern=r"^swesmith/[A-Za-z0-9_.-]+$")
    patch: str = Field(min_length=1)
    FAIL_TO_PASS: list[str] = Field(min_length=1)
    PASS_TO_PASS: list[str]
    image_name: str = Field(min_length=1)
    problem_statement: str = Field(min_length=1)

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _lists(cls, value: object) -> object:
        return name_list(value)


def holds_swesmith_rows(path: Path) -> bool:
    """Whether a `.jsonl` or `.parquet` file holds SWE-smith's rows: its first row says."""
    first = next((data for _, data in rows(path) if isinstance(data, dict)), None)
    return first is not None and is_swesmith_row(first)


def is_swesmith_row(data: dict[str, Any]) -> bool:
    """SWE-smith's rows name their repository by its mirror (`swesmith/owner__repo.sha8`)
    or their image by SWE-smith's (`.../swesmith.x86_64...`)."""
    repo, image = data.get("repo"), data.get("image_name")
    return (isinstance(repo, str) and repo.startswith("swesmith/")) or (
        isinstance(image, str) and "/swesmith." in image
    )


def fresh_history(instance_id: str, withheld: list[str]) -> str:
    """The set-up step after the bug: the tree as the only commit of a fresh history, the
    withheld test files left untracked (set-up then takes them out of checkpoint 0)."""
    unstage = (
        f" && git rm -q --cached -- {' '.join(map(shlex.quote, withheld))}" if withheld else ""
    )
    return (
        "rm -rf .git && git init -q && git add -A"
        + unstage
        + " && git -c user.name=sprout -c user.email=sprout@localhost commit -q -m "
        + shlex.quote(f"SWE-smith instance {instance_id}")
    )


def eval_script(test_cmd: str, p2p_files: list[str]) -> str:
    """What SWE-smith's evaluation does once the patch is in: the PASS_TO_PASS test files
    back as committed (the FAIL_TO_PASS ones come back withheld), then the test command
    between its markers, traced, so that the markers are `+ : '...'` lines of the log."""
    revert = [f"git checkout -- {' '.join(p2p_files)}"] if p2p_files else []
    return "\n".join(
        [
            "#!/bin/bash",
            f"cd {WORKDIR}",
            *revert,
            "set -uxo pipefail",
            f"cd {WORKDIR}",
            f": '{START}'",
            test_cmd,
            f": '{END}'",
            "",
        ]
    )


def smith_task(
    data: dict[str, Any], where: str, path: Path, profile: dict[str, Any] | None, python: str
) -> Task:
    """The task of one row, its profile's answers given; TaskError names the row and the
    field, or what the profile said."""
    try:
        row = SmithRow.model_validate(data)
    except ValidationError as error:
        raise TaskError(f"{where}: {field_problem(error)}") from None
    if profile is None:  # a row the profiles were not asked about: no instance id to ask by
        raise TaskError(f"{where}: instance_id: missing")
    if "error" in profile:
        raise TaskError(f"{where}: repo: SWE-smith's profile for {row.repo}: {profile['error']}")
    f2p = [str(name) for name in profile["f2p_files"]]
    grading = SweSmithGrading(
        python=python,
        instance={
            "instance_id": row.instance_id,
            "repo": row.repo,
            "image_name": row.image_name,
            "patch": row.patch,
            "FAIL_TO_PASS": row.FAIL_TO_PASS,
            "PASS_TO_PASS": row.PASS_TO_PASS,
        },
    )
    return Task(
        id=row.instance_id,
        path=path,
        instruction=row.problem_statement.strip(),
        image=image_reference(row.image_name, f"{where}: image_name"),
        workdir=WORKDIR,
        setup=(
            SetupStep(kind="run", command=apply_command(row.patch), workdir=WORKDIR),
            SetupStep(kind="run", command=fresh_history(row.instance_id, f2p), workdir=WORKDIR),
        ),
        withheld=tuple(f"{WORKDIR}/{name}" for name in f2p),
        solution=(SolutionStep(command=apply_command(row.patch, reverse=True)),),
        test_files={EVAL_SCRIPT: eval_script(str(profile["test_cmd"]), profile["p2p_files"])},
        verifier_command=f"bash /tests/{EVAL_SCRIPT} > {grading.log} 2>&1",
        verifier_timeout_s=VERIFIER_TIMEOUT_S,
        results="swe-smith",
        swesmith=grading,
    )


def load_swesmith(path: str | Path, python: str | None) -> list[Task | TaskError]:
    """One Task, or the TaskError naming what is wrong with it, per row; no interpreter,
    or one without swesmith, is one TaskError for the whole file."""
    path = Path(path).resolve()
    if python is None:
        raise TaskError(
            f"{path}: SWE-smith's rows: pass --swe-smith PYTHON, a Python interpreter with the "
            "swesmith package (its profiles hold each repository's test command and parser)"
        )
    asked = {}
    for _, data in rows(path):
        if isinstance(data, dict) and isinstance(data.get("instance_id"), str):
            asked[data["instance_id"]] = {**data, **_lists(data)}
    try:
        answers = run_child(
            python,
            PROFILES,
            given=list(asked.values()),
            where=f"--swe-smith {python}",
            failing="its swesmith profiles could not be read",
        )
    except ChildFailed as error:
        raise TaskError(str(error)) from None
    profiles = dict(zip(asked, answers, strict=True))
    return instance_tasks(
        path,
        lambda data, where: smith_task(
            data, where, path, profiles.get(str(data.get("instance_id"))), python
        ),
    )


def _lists(data: dict[str, Any]) -> dict[str, Any]:
    """The row's test lists as lists, for the profiles (a bad one is the row's error later)."""
    lists = {}
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        try:
            lists[key] = name_list(data.get(key, []))
        except ValueError:
            lists[key] = []
    return lists
