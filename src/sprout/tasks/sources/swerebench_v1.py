"""SWE-rebench (V1) rows as Nebius publishes them (`nebius/SWE-rebench`, its leaderboard
set; JSONL or parquet), on the publisher's images and graded as its fork of SWE-bench's
harness grades them.

A row is SWE-bench-shaped and carries its own harness specification, `install_config`
(`test_cmd`, `log_parser`, `install`, `eval_commands`, ...), from which the fork builds
each instance's eval script as SWE-bench's harness does for Python repositories: in
/testbed with the `testbed` conda environment active, the specification's eval commands
and install command, the test files the test patch touches reset to the base commit, the
test patch applied, the test command (with `LANG=C.UTF-8 LC_ALL=C.UTF-8` before it, as the
fork adds) over the test files the patch changes, between the harness's markers
(`sprout.tasks.sources.swebench_harness`). The script reaches the verifier's fork only, and
the log is graded by the fork's rules (`sprout.verify.swebench_fork_grading`). The image is
the row's own field, else the fork's name for the instance,
`swerebench/sweb.eval.x86_64.<id>` (lower-cased, `__` written `_1776_`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sprout import logparsers
from sprout.task import SweBenchGrading, Task, TaskError
from sprout.tasks.imageref import image_reference
from sprout.tasks.sources.rows import field_problem, fields, instance_tasks, object_value
from sprout.tasks.sources.swebench_harness import Fork, harness_task, test_directives
from sprout.tasks.sources.swebench_harness import eval_script as harness_script
from sprout.tasks.sources.swebench_rows import IMAGE_FIELDS, PatchedRow

NAMESPACE = "swerebench"
FORK = Fork(
    markers=True,
    locale="LANG=C.UTF-8 LC_ALL=C.UTF-8 ",
    diff="git -c core.fileMode=false diff",
    removed_are_tests=False,
)
V1_FIELDS = {"install_config", "environment_setup_commit"}
"""A V1 row has both (and no `language` or `image_name`, which tell a V2 row)."""


class HarnessSpec(BaseModel):
    """The parts of `install_config` the eval script and the grader read (the rest built
    the image)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    test_cmd: str = Field(min_length=1)
    log_parser: str = Field(min_length=1)
    install: str | None = None
    eval_commands: list[str] = Field(default_factory=list)

    @field_validator("test_cmd", mode="before")
    @classmethod
    def _last_command(cls, value: object) -> object:
        """A list of commands is run as its last one, as the fork's grader reads it."""
        return value[-1] if isinstance(value, list) and value else value

    @field_validator("log_parser")
    @classmethod
    def _known(cls, value: str) -> str:
        return logparsers.require(value)


class V1Row(PatchedRow):
    """The published fields sprout reads (hints_text, created_at, meta, requirements,
    environment and license_name are the publisher's: the harness reads none of them)."""

    install_config: HarnessSpec

    @field_validator("install_config", mode="before")
    @classmethod
    def _spec(cls, value: object) -> object:
        """An object, or the text of one; keys whose value is null are dropped, as the
        fork drops them."""
        value = object_value(value)
        if isinstance(value, dict):
            return {key: item for key, item in value.items() if item is not None}
        return value


def eval_script(row: V1Row) -> str:
    """The instance's eval script as the fork builds it for a Python repository."""
    spec = row.install_config
    tests = test_directives(row.repo, row.test_patch, FORK)
    return harness_script(
        fork=FORK,
        base_commit=row.base_commit,
        test_patch=row.test_patch,
        test_command=" ".join([spec.test_cmd, *tests]),
        install=spec.install,
        eval_commands=spec.eval_commands,
    )


def default_image(instance_id: str) -> str:
    """The fork's name for an instance's image on the publisher's registry namespace."""
    return f"{NAMESPACE}/sweb.eval.x86_64.{instance_id.lower()}:latest".replace("__", "_1776_")


def v1_task(data: dict[str, Any], where: str, path: Path) -> Task:
    """The task of one row; TaskError names the row (`where`: its id, file and line) and
    the field."""
    try:
        row = V1Row.model_validate(data)
    except ValidationError as error:
        raise TaskError(f"{where}: {field_problem(error)}") from None
    own = next((data[name] for name in IMAGE_FIELDS if isinstance(data.get(name), str)), "")
    image = own.strip() or default_image(row.instance_id)
    grading = SweBenchGrading(
        instance_id=row.instance_id,
        repo=row.repo,
        log_parser=row.install_config.log_parser,
        fail_to_pass=tuple(row.FAIL_TO_PASS),
        pass_to_pass=tuple(row.PASS_TO_PASS),
        harness="swe-rebench",
    )
    return harness_task(
        path=path,
        instruction=row.problem_statement,
        image=image_reference(image, f"{where}: image"),
        patch=row.patch,
        script=eval_script(row),
        grading=grading,
        base_commit=row.base_commit,
    )


def load_swerebench_v1(path: str | Path) -> list[Task | TaskError]:
    """One Task, or the TaskError naming what is wrong with it, per row of a .jsonl or
    .parquet file, read a batch at a time."""
    path = Path(path).resolve()
    return instance_tasks(path, lambda data, where: v1_task(data, where, path))


def holds_v1_rows(path: Path) -> bool:
    """Whether a `.jsonl` or `.parquet` file holds SWE-rebench V1 rows: its fields say."""
    found = fields(path)
    return found >= V1_FIELDS and "language" not in found
