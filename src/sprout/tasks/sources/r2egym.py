"""R2E-Gym rows as published (the R2E-Gym-Lite, -Subset and -V1 datasets; DeepSWE trains
on the Subset): one task per row of a `.jsonl` or `.parquet` file, on the row's own image,
graded as R2E-Gym grades it.

A row holds `repo_name`, `docker_image` (`namanjain12/<repo>_final:<commit>`), `commit_hash`
(the fix's commit), `problem_statement`, `parsed_commit_content` (the fix as file diffs,
`r2egym_commit`) and `expected_output_json` (each hidden test's status once the fix is in);
the others (`modified_files`, `relevant_files`, `prompt`, counts) are not needed. The image
holds the repository at /testbed, checked out at the fix's parent, and the hidden tests:
/r2e_tests and /testbed/run_tests.sh. R2E-Gym moves both out of the repository before its
agent starts; here they are withheld from checkpoint 0 (`Task.withheld`) and only the
verifier's fork gets them back, where it runs run_tests.sh as R2E-Gym does and
`sprout.verify.r2egym_grading` reads its log.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sprout.task import GitHistory, R2EGymGrading, SetupStep, SolutionStep, Task, TaskError
from sprout.tasks.imageref import image_reference
from sprout.tasks.sources.r2egym_commit import ParsedCommit, read_parsed_commit
from sprout.tasks.sources.rows import field_problem, fields, lone_surrogate, rows
from sprout.tasks.sources.swebench_rows import apply_command

WORKDIR = "/testbed"
TESTS = "/r2e_tests"
RUN_TESTS = "/testbed/run_tests.sh"
MOVED_TO = "/root"
"""Where R2E-Gym puts run_tests.sh and r2e_tests (its `alt_path`), linking
/testbed/r2e_tests to them: the script runs `pytest -rA r2e_tests` in /testbed."""
RUN_TESTS_TIMEOUT_S = 300
"""R2E-Gym's limit on run_tests.sh; past it the log holds no results, reward 0."""
VERIFIER_TIMEOUT_S = 360.0
CLEAN = (
    f"find {WORKDIR} {TESTS} -name '*.pyc' -delete; "
    f"find {WORKDIR} {TESTS} -name __pycache__ -prune -exec rm -rf {{}} +; true"
)
"""R2E-Gym's start, before its agent: no bytecode in the repository (its .venv included)
or the tests."""
COLUMNS = (
    "repo_name",
    "docker_image",
    "commit_hash",
    "problem_statement",
    "parsed_commit_content",
    "expected_output_json",
)
"""The published fields a task is made from."""
OWN_FIELDS = ("repo_name", "commit_hash", "parsed_commit_content", "expected_output_json")
"""Fields SWE-bench's rows do not have (they may carry `docker_image` too)."""


def verifier_command(log: str) -> str:
    """The hidden tests put where R2E-Gym runs them from, then run_tests.sh in /testbed
    under R2E-Gym's limit, its output (stdout and stderr together, as R2E-Gym reads it)
    into `log`."""
    moved_tests, moved_script = f"{MOVED_TO}/r2e_tests", f"{MOVED_TO}/run_tests.sh"
    return (
        f"mkdir -p {MOVED_TO} && rm -rf {moved_tests} {moved_script} {WORKDIR}/r2e_tests"
        f" && mv {TESTS} {moved_tests} && mv {RUN_TESTS} {moved_script}"
        f" && ln -s {moved_tests} {WORKDIR}/r2e_tests && cd {WORKDIR}"
        f" && timeout {RUN_TESTS_TIMEOUT_S} bash {moved_script} > {shlex.quote(log)} 2>&1"
    )


class R2EGymRow(BaseModel):
    """The fields of a published row that make its task; the others are ignored."""

    model_config = ConfigDict(extra="ignore", strict=True)

    repo_name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    docker_image: str = Field(min_length=1)
    commit_hash: str = Field(pattern=r"^[0-9a-f]{7,40}$")
    problem_statement: str = Field(min_length=1)
    parsed_commit_content: ParsedCommit
    expected_output_json: dict[str, str]

    @field_validator("parsed_commit_content", mode="before")
    @classmethod
    def _commit(cls, value: object) -> ParsedCommit:
        return read_parsed_commit(value)

    @field_validator("expected_output_json", mode="before")
    @classmethod
    def _statuses(cls, value: object) -> object:
        """A JSON string of {test: status}, as published."""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as error:
                raise ValueError(f"not valid JSON ({error})") from None
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ValueError("expected a JSON object of test name -> status")
        return value


def task_id(repo_name: str, commit_hash: str) -> str:
    """The repository and the fix's commit: what makes a row (R2E-Gym has no instance id)."""
    return f"{repo_name}-{commit_hash}"


def issue_text(problem_statement: str) -> str:
    """What R2E-Gym's agent is given: the text between [ISSUE] and [/ISSUE] where the
    statement has them, else the whole statement."""
    found = re.search(r"\[ISSUE\](.*)\[/ISSUE\]", problem_statement, re.DOTALL)
    return (found.group(1) if found else problem_statement).strip()


def row_task(data: dict[str, Any], where: str, path: Path) -> Task:
    """The task of one row; TaskError names the row (its id, else "?"), where it is and
    the field."""
    label = _label(data)
    broken = lone_surrogate(data)
    if broken is not None:
        raise TaskError(f"{label}: {where}: {broken}: not valid Unicode (half a surrogate pair)")
    try:
        row = R2EGymRow.model_validate(data)
    except ValidationError as error:
        raise TaskError(f"{label}: {where}: {field_problem(error)}") from None
    image = image_reference(row.docker_image, f"{label}: {where}: docker_image")
    commit_of_fix = row.parsed_commit_content
    patch = commit_of_fix.gold_patch()
    parent = commit_of_fix.old_commit_hash
    grading = R2EGymGrading(expected=row.expected_output_json)
    return Task(
        id=label,
        path=path,
        instruction=issue_text(row.problem_statement),
        image=image,
        workdir=WORKDIR,
        setup=(SetupStep(kind="run", command=CLEAN, workdir=WORKDIR, origin="R2E-Gym's start"),),
        withheld=(TESTS, RUN_TESTS),
        solution=(SolutionStep(command=apply_command(patch)),) if patch else (),
        verifier_command=verifier_command(grading.log),
        verifier_timeout_s=VERIFIER_TIMEOUT_S,
        results="r2egym",
        r2egym=grading,
        git_history=(
            GitHistory(repo=WORKDIR, base_commit=parent)
            if re.fullmatch(r"[0-9a-f]{40}", parent)
            else None
        ),
    )


def _label(data: dict[str, Any]) -> str:
    """The row's task id for its errors, or "?" when its fields cannot make one."""
    repo, commit = data.get("repo_name"), data.get("commit_hash")
    fits = isinstance(repo, str) and re.fullmatch(r"[A-Za-z0-9_.-]+", repo) is not None
    if fits and isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{7,40}", commit):
        return task_id(str(repo), commit)
    return "?"


def is_r2egym_rows(path: Path) -> bool:
    """Whether a `.jsonl` or `.parquet` file holds R2E-Gym's rows rather than SWE-bench's:
    R2E-Gym's fields and no `instance_id` (every SWE-bench row, R2E-Gym's SWE-bench-Verified
    export included, has one)."""
    found = fields(path)
    return "instance_id" not in found and bool(found & set(OWN_FIELDS))


def load_r2egym(path: str | Path) -> list[Task | TaskError]:
    """One Task, or the TaskError naming what is wrong with it, per row of a `.jsonl` or
    `.parquet` file of R2E-Gym's rows. A file that cannot be read at all is one TaskError
    raised for the whole file."""
    path = Path(path).resolve()
    results: list[Task | TaskError] = []
    for where, data in rows(path, COLUMNS):
        if isinstance(data, TaskError):
            results.append(data)
            continue
        try:
            results.append(row_task(data, where, path))
        except TaskError as error:
            results.append(error)
    return results
