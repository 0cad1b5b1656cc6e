"""SWE-rebench V2 rows as Nebius publishes them (JSONL, or the Hugging Face dataset's parquet
file), on the publisher's images and graded as its evaluation script grades them.

A row names its image (`image_name`: `docker.io/swerebenchv2/<owner>-<repo>:<pr>-<sha7>`,
the repository at /<repo-name>, checked out at `base_commit`) and how its tests run, in
`install_config`: `test_cmd` (shell commands, run in order under `set -e`) and
`log_parser` (the name of the parser that reads their output; `sprout.logparsers`). The
evaluation applies the test patch (`git apply --3way` with the publisher's options) over
the patched repository, runs the test commands, hands stdout then stderr to the parser
and resolves when the tests that PASSED are exactly FAIL_TO_PASS and PASS_TO_PASS
(`sprout.verify.swerebench_grading`). Here the attempt's final checkpoint is the patched
repository; the test patch and the script reach the verifier's fork only. The repositories
are in any language (C, Go, Java, JavaScript, Rust, ...): nothing here assumes pytest.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sprout import logparsers
from sprout.task import GitHistory, RebenchGrading, SolutionStep, Task, TaskError
from sprout.tasks.imageref import image_reference
from sprout.tasks.sources.rows import field_problem, fields, instance_tasks, object_value
from sprout.tasks.sources.swebench_rows import PatchedRow, apply_command

V2_FIELDS = {"install_config", "image_name", "language"}
"""The fields that tell a V2 row from the other SWE-bench-shaped rows."""
TEST_PATCH = "test_patch.diff"
VERIFIER_SCRIPT = "run.sh"
VERIFIER_TIMEOUT_S = 3600.0
APPLY = "git apply -v --3way --recount --ignore-space-change --whitespace=nowarn"
"""How the publisher's evaluation applies a patch."""
JAVA_OPTIONS = "-Djava.net.preferIPv6Addresses=false"
"""The one variable the publisher's evaluation sets in the container."""


class InstallConfig(BaseModel):
    """The parts of `install_config` the evaluation reads (the install steps built the
    image; the base image is the image's own)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    test_cmd: list[str] = Field(min_length=1)
    log_parser: str = Field(min_length=1)

    @field_validator("test_cmd", mode="before")
    @classmethod
    def _commands(cls, value: object) -> object:
        """One command or a list; blank ones dropped, as the evaluation drops them."""
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            return [command for command in value if not isinstance(command, str) or command.strip()]
        return value

    @field_validator("log_parser")
    @classmethod
    def _known(cls, value: str) -> str:
        return logparsers.require(value)


class RebenchRow(PatchedRow):
    """The published fields sprout reads (meta, pr_description, interface, language and
    created_at are the publisher's labels: its evaluation reads none of them)."""

    install_config: InstallConfig
    image_name: str = Field(min_length=1)

    @field_validator("install_config", mode="before")
    @classmethod
    def _config(cls, value: object) -> object:
        return object_value(value)

    @property
    def workdir(self) -> str:
        """Where the image holds the repository: /<repo-name>, as the evaluation runs."""
        return "/" + self.repo.split("/")[1]


def verifier_script(row: RebenchRow) -> str:
    """What the evaluation runs in its container once the patch is in: the test patch, then
    the test commands, under `set -e` (a command that fails ends the run, as there), stdout
    and stderr to the two logs the grader joins."""
    stdout, stderr = RebenchGrading.model_fields["logs"].default
    body = [APPLY + f" /tests/{TEST_PATCH}", *row.install_config.test_cmd]
    return "\n".join(
        [
            f"# SWE-rebench V2's evaluation of {row.instance_id}, after the patch",
            f"cd {shlex.quote(row.workdir)}",
            f"exec > {stdout} 2> {stderr}",
            "set -e",
            *body,
            "",
        ]
    )


def rebench_task(data: dict[str, Any], where: str, path: Path) -> Task:
    """The task of one row; TaskError names the row (`where`: its id, file and line) and
    the field."""
    try:
        row = RebenchRow.model_validate(data)
    except ValidationError as error:
        raise TaskError(f"{where}: {field_problem(error)}") from None
    grading = RebenchGrading(
        log_parser=row.install_config.log_parser,
        fail_to_pass=tuple(row.FAIL_TO_PASS),
        pass_to_pass=tuple(row.PASS_TO_PASS),
    )
    return Task(
        id=row.instance_id,
        path=path,
        instruction=row.problem_statement.strip(),
        image=image_reference(row.image_name, f"{where}: image_name"),
        workdir=row.workdir,
        solution=(SolutionStep(command=apply_command(row.patch)),) if row.patch else (),
        test_files={TEST_PATCH: row.test_patch, VERIFIER_SCRIPT: verifier_script(row)},
        verifier_command=f"bash /tests/{VERIFIER_SCRIPT}",
        verifier_timeout_s=VERIFIER_TIMEOUT_S,
        verifier_env={"_JAVA_OPTIONS": JAVA_OPTIONS},
        results="swe-rebench",
        rebench=grading,
        git_history=GitHistory(repo=row.workdir, base_commit=row.base_commit),
    )


def load_swerebench(path: str | Path) -> list[Task | TaskError]:
    """One Task, or the TaskError naming what is wrong with it, per row of a .jsonl or
    .parquet file, read a batch at a time."""
    path = Path(path).resolve()
    return instance_tasks(path, lambda data, where: rebench_task(data, where, path))


def holds_rebench_rows(path: Path) -> bool:
    """Whether a `.jsonl` or `.parquet` file holds SWE-rebench V2 rows: its fields say."""
    return fields(path) >= V2_FIELDS
