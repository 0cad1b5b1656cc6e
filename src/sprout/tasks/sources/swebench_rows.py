"""SWE-bench rows on their own instance images, graded as SWE-bench's harness grades them.

The rows of SWE-bench's current datasets (and of the `swebench` package's task
repositories) carry everything the harness runs: `eval_script` (reset the test
files, apply the test patch, run the repository's own test command between the
harness's markers), `log_parser` (Django's, SymPy's, pytest's ...) and `eval_type`.
Such a row needs no clone and no sidecar: its image is its own field (`image`,
`docker_image` or `image_name`, as SWE-Gym, R2E-Gym and SWE-smith name it), else
the name the harness derives for its instance id, with the repository at
/testbed as the image has it. The eval script is the hidden test: it reaches only
the verifier's fork, whose log the package's parser reads
(`sprout.verify.swebench_grading`). A row's gold patch is the oracle's one turn
(`apply_command`), here for both kinds of rows: `sprout.tasks.sources.swebench` builds on
this module.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sprout.task import GitHistory, SolutionStep, SweBenchGrading, Task, TaskError
from sprout.tasks.imageref import image_reference
from sprout.tasks.sources.rows import field_problem, name_list

WORKDIR = "/testbed"
EVAL_SCRIPT = "eval.sh"
IMAGE_FIELDS = ("image", "docker_image", "image_name")
VERIFIER_TIMEOUT_S = 1800.0


class SweBenchInstance(BaseModel):
    """The fields every SWE-bench row has, read the same way whichever way it runs; the
    others (hints_text, created_at, ...) are kept out of the task."""

    model_config = ConfigDict(extra="ignore", strict=True)

    instance_id: str = Field(pattern=r"^\S+$")
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    problem_statement: str = Field(min_length=1)
    patch: str | None = None
    FAIL_TO_PASS: list[str] = Field(min_length=1)
    PASS_TO_PASS: list[str]
    version: str | None = None

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decode(cls, value: object) -> object:
        """The Hugging Face datasets store these lists as JSON strings (some exports as a
        Python list's repr)."""
        return name_list(value)

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: object) -> object:
        return None if value is None else str(value)


class PatchedRow(SweBenchInstance):
    """A row whose image holds its repository at `base_commit` and whose tests come as a
    test patch (SWE-rebench's and SWE-Gym's): the fields their sources share."""

    base_commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    test_patch: str = Field(min_length=1)


def apply_command(patch: str, *, reverse: bool = False) -> str:
    """A shell command that applies `patch` in the workdir (undoes it, `reverse`): a quoted
    here-document, or base64 when a line looks like a Markdown fence (the oracle's reply
    puts commands in fences)."""
    text = patch if patch.endswith("\n") else patch + "\n"
    lines = text.splitlines()
    apply = "git apply --verbose --reverse" if reverse else "git apply --verbose"
    if any(line.strip().startswith("```") for line in lines):
        encoded = base64.b64encode(text.encode()).decode()
        return f"echo {encoded} | base64 -d | {apply}"
    marker = "SPROUT_PATCH"
    while marker in lines:
        marker += "_"
    return f"{apply} <<'{marker}'\n{text}{marker}"


class SweBenchRow(SweBenchInstance):
    """A row on its own image: the harness's script and parser besides."""

    base_commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")
    """The commit the image's /testbed is at (SWE-bench's datasets all have it): what
    checkpoint 0 keeps of its history, with its ancestors (`Task.git_history`)."""
    eval_script: str = Field(min_length=1)
    log_parser: str = Field(min_length=1)
    eval_type: Literal["pass_and_fail", "fail_only"] = "pass_and_fail"

    @field_validator("log_parser")
    @classmethod
    def _known(cls, value: str) -> str:
        from swebench.harness.log_parsers import PARSER_REGISTRY

        if value not in PARSER_REGISTRY:
            raise ValueError(f"{value!r} is not a parser of the swebench package")
        return value


def is_image_row(data: dict[str, Any]) -> bool:
    """Whether a row carries the harness's own script and parser."""
    return "eval_script" in data and "log_parser" in data


def row_image(data: dict[str, Any], instance_id: str) -> str:
    """The row's own image field, else the name SWE-bench's harness derives for it."""
    for name in IMAGE_FIELDS:
        value = data.get(name)
        if isinstance(value, str) and value.strip():
            return value
    from swebench.task.checks import expected_image

    return str(expected_image(instance_id))


def _recording_exit_code(script: str) -> str:
    """The row's eval script as the harness runs it: its test command's exit status echoed
    after the end marker, which the harness's grading checks the statuses against."""
    from swebench.harness.utils import parse_eval_script, record_test_exit_code

    lines = record_test_exit_code(parse_eval_script(script))
    return "\n".join(["#!/bin/bash", "set -uxo pipefail", *lines]) + "\n"


def image_row_task(data: dict[str, Any], where: str, path: Path, label: str) -> Task:
    """The task of one row on its own image; TaskError names the row and the field."""
    try:
        row = SweBenchRow.model_validate(data)
    except ValidationError as error:
        raise TaskError(f"{label}: {where}: {field_problem(error)}") from None
    image = image_reference(row_image(data, row.instance_id), f"{label}: {where}: image")
    grading = SweBenchGrading(
        instance_id=row.instance_id,
        repo=row.repo,
        version=row.version or "",
        log_parser=row.log_parser,
        eval_type=row.eval_type,
        fail_to_pass=tuple(row.FAIL_TO_PASS),
        pass_to_pass=tuple(row.PASS_TO_PASS),
    )
    return Task(
        id=row.instance_id,
        path=path,
        instruction=row.problem_statement.strip(),
        image=image,
        workdir=WORKDIR,
        solution=(SolutionStep(command=apply_command(row.patch)),) if row.patch else (),
        test_files={EVAL_SCRIPT: _recording_exit_code(row.eval_script)},
        verifier_command=f"bash /tests/{EVAL_SCRIPT} > {grading.log} 2>&1",
        verifier_timeout_s=VERIFIER_TIMEOUT_S,
        results="swebench",
        swebench=grading,
        git_history=(
            None
            if row.base_commit is None
            else GitHistory(repo=WORKDIR, base_commit=row.base_commit)
        ),
    )
