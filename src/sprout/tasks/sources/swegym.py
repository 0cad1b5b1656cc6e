"""SWE-Gym rows as published (`SWE-Gym/SWE-Gym` and its Lite split; JSONL or parquet), on
the images SWE-Gym's evaluation names and graded as its fork of SWE-bench's harness grades.

A row is SWE-bench's shape (`instance_id`, `repo`, `version`, `base_commit`, `patch`,
`test_patch`, `FAIL_TO_PASS`, `PASS_TO_PASS`, `problem_statement`) with no image and no
harness specification: the specification of its repository and version and its log
parser come from the fork's tables (`swegym_fork`, a checkout named by `--swe-gym DIR`).
The eval script is the fork's, SWE-bench 2.0's (`swebench_harness`: no markers, `git diff`,
every file the test patch names as a test to run, mypy's test cases selected by name), and
the log is graded by that harness's rules (`sprout.verify.swebench_fork_grading`). The
image is the row's own field, else SWE-Gym's name for the instance,
`xingyaoww/sweb.eval.x86_64.<id>` (lower-cased, `__` written `_s_`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from sprout import logparsers
from sprout.task import SweBenchGrading, Task, TaskError
from sprout.tasks.imageref import image_reference
from sprout.tasks.sources.rows import field_problem, instance_tasks
from sprout.tasks.sources.swebench_harness import Fork, eval_script, harness_task, test_directives
from sprout.tasks.sources.swebench_rows import IMAGE_FIELDS, PatchedRow
from sprout.tasks.sources.swegym_fork import ForkTables, read_fork

NAMESPACE = "xingyaoww"
FORK = Fork(markers=False, locale="", diff="git diff", removed_are_tests=True)
_MYPY_CASE = re.compile(r"\[case ([^\]]+)\]")


class GymRow(PatchedRow):
    """The published fields sprout reads (hints_text, created_at and
    environment_setup_commit are the publisher's: the harness reads none of them)."""

    version: str = Field(min_length=1)


def default_image(instance_id: str) -> str:
    """SWE-Gym's name for an instance's image."""
    return f"{NAMESPACE}/sweb.eval.x86_64.{instance_id.lower().replace('__', '_s_')}:latest"


def test_command(row: GymRow, test_cmd: str) -> str:
    """The fork's test command: mypy's cases by name (`-k "a or b"`), else the test files."""
    if row.repo == "python/mypy":
        return f'{test_cmd} "{" or ".join(_MYPY_CASE.findall(row.test_patch))}"'
    return " ".join([test_cmd, *test_directives(row.repo, row.test_patch, FORK)])


def gym_task(data: dict[str, Any], where: str, path: Path, fork: ForkTables) -> Task:
    """The task of one row; TaskError names the row (`where`: its id, file and line), and
    the field or what the fork's tables lack for it."""
    try:
        row = GymRow.model_validate(data)
    except ValidationError as error:
        raise TaskError(f"{where}: {field_problem(error)}") from None
    repo = row.repo.lower()
    spec = fork.specs.get(repo, {}).get(row.version)
    if spec is None or not isinstance(spec.get("test_cmd"), str):
        raise TaskError(
            f"{where}: version: {fork.folder} has no specification (with a test_cmd) for "
            f"{row.repo} {row.version}"
        )
    parser = fork.parsers.get(repo)
    if parser is None or logparsers.find(parser) is None:
        named = f"names {parser}, which sprout does not have" if parser else "names no parser"
        raise TaskError(f"{where}: repo: {fork.folder} {named} for {row.repo}")
    own = next((data[name] for name in IMAGE_FIELDS if isinstance(data.get(name), str)), "")
    image = own.strip() or default_image(row.instance_id)
    install = spec.get("install")
    script = eval_script(
        fork=FORK,
        base_commit=row.base_commit,
        test_patch=row.test_patch,
        test_command=test_command(row, spec["test_cmd"]),
        install=install if isinstance(install, str) else None,
        eval_commands=[str(command) for command in spec.get("eval_commands", [])],
    )
    grading = SweBenchGrading(
        instance_id=row.instance_id,
        repo=row.repo,
        version=row.version,
        log_parser=parser,
        fail_to_pass=tuple(row.FAIL_TO_PASS),
        pass_to_pass=tuple(row.PASS_TO_PASS),
        harness="swe-gym",
    )
    return harness_task(
        path=path,
        instruction=row.problem_statement,
        image=image_reference(image, f"{where}: image"),
        patch=row.patch,
        script=script,
        grading=grading,
        base_commit=row.base_commit,
    )


def load_swegym(path: str | Path, fork_folder: str | Path) -> list[Task | TaskError]:
    """One Task, or the TaskError naming what is wrong with it, per row; the fork's tables
    that cannot be read are one TaskError for the whole file."""
    path = Path(path).resolve()
    fork = read_fork(Path(fork_folder).resolve())
    return instance_tasks(path, lambda data, where: gym_task(data, where, path, fork))
