"""SWE-bench Pro rows as Scale AI publishes them (JSONL, or the Hugging Face dataset's
parquet file), on the publisher's images and graded as the publisher's harness grades them.

A row names its image by `dockerhub_tag` (`jefzda/sweap-images:TAG`, the repository at /app)
and its tests by `fail_to_pass`, `pass_to_pass` and `selected_test_files_to_run` (strings
holding lists, which the harness reads as Python literals). The test command and the grader
are not in the row: they are `run_scripts/<instance_id>/run_script.sh` and `parser.py` of the
publisher's repository, found beside the file or named by `--run-scripts`. They reach only
the verifier's fork, which does what the harness's entry script does once the patch is in
(the last line of `before_repo_set_cmd`, the run script, the parser); the verifier reads the
parser's output.json (`results = "swebench-pro"`). The rest of `before_repo_set_cmd` is
checkpoint 0's set-up: the repository at its base commit, as the publisher's agents start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sprout.task import GitHistory, SetupStep, SolutionStep, Task, TaskError
from sprout.tasks.files import not_utf8
from sprout.tasks.imageref import image_reference
from sprout.tasks.sources.rows import field_problem, fields, instance_tasks, name_list
from sprout.tasks.sources.swebench_rows import IMAGE_FIELDS, apply_command

IMAGE_REPOSITORY = "jefzda/sweap-images"
WORKDIR = "/app"
RUN_SCRIPTS = "run_scripts"
LOGS = "/logs/verifier"
VERIFIER_SCRIPT = "run.sh"
VERIFIER_TIMEOUT_S = 3600.0
"""The harness's sandbox lives an hour at most."""
PRO_FIELDS = ("dockerhub_tag", "before_repo_set_cmd", "selected_test_files_to_run")
"""The fields only SWE-bench Pro's rows have: a row with any of them is read as one."""


class ProRow(BaseModel):
    """The published fields sprout reads (test_patch, repo_language and the issue labels
    are left out: the harness reads none of them)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    instance_id: str = Field(pattern=r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    """Also the name of its folder under run_scripts/: never a path of its own."""
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    base_commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    patch: str | None = None
    problem_statement: str = Field(min_length=1)
    requirements: str
    interface: str
    fail_to_pass: list[str] = Field(min_length=1)
    pass_to_pass: list[str]
    before_repo_set_cmd: str = Field(pattern=r"\S")
    selected_test_files_to_run: list[str]
    dockerhub_tag: str = Field(min_length=1)

    @field_validator("fail_to_pass", "pass_to_pass", "selected_test_files_to_run", mode="before")
    @classmethod
    def _lists(cls, value: object) -> object:
        return name_list(value)


def instruction(row: ProRow) -> str:
    """The prompt the publisher's agents get (its helper_code's create_problem_statement)."""
    return (
        f"{row.problem_statement}\n\nRequirements:\n{row.requirements}"
        f"\n\nNew interfaces introduced:\n{row.interface}"
    )


def verifier_script(row: ProRow) -> str:
    """What the harness's entry script runs after it applied the patch: the agent's final
    checkpoint is the patched repository, so no reset and no apply. The selected files go
    to the run script joined by commas, unquoted, as the harness writes them."""
    last = row.before_repo_set_cmd.strip().split("\n")[-1]
    selected = ",".join(row.selected_test_files_to_run)
    return "\n".join(
        [
            f"# SWE-bench Pro's entry script for {row.instance_id}, after the patch",
            f"cd {WORKDIR}",
            last,
            f"bash /tests/run_script.sh {selected} > {LOGS}/stdout.log 2> {LOGS}/stderr.log",
            f"python /tests/parser.py {LOGS}/stdout.log {LOGS}/stderr.log {LOGS}/output.json",
            "",
        ]
    )


def instance_scripts(folder: Path, instance_id: str, where: str) -> dict[str, str]:
    """run_script.sh and parser.py of `instance_id` under the run_scripts `folder`;
    TaskError naming the file that is missing or unreadable."""
    if not (folder / instance_id).is_dir():
        raise TaskError(f"{where}: instance_id: {folder} has no folder for this instance")
    scripts = {}
    for name in ("run_script.sh", "parser.py"):
        path = folder / instance_id / name
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise TaskError(f"{where}: {name}: {path} is missing") from None
        except OSError as error:
            raise TaskError(f"{where}: {name}: {path} cannot be read ({error.strerror})") from None
        try:
            scripts[name] = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TaskError(f"{where}: {name}: {path}: {not_utf8(data, error)}") from None
    return scripts


def pro_task(data: dict[str, Any], where: str, path: Path, run_scripts: Path) -> Task:
    """The task of one row; TaskError names the row (`where`: its instance, file and line)
    and the field."""
    try:
        row = ProRow.model_validate(data)
    except ValidationError as error:
        raise TaskError(f"{where}: {field_problem(error)}") from None
    image = _image(data, row, where)
    scripts = instance_scripts(run_scripts, row.instance_id, where)
    before = row.before_repo_set_cmd.strip().split("\n")[:-1]
    setup = [SetupStep(kind="run", command="\n".join(before), workdir=WORKDIR)]
    return Task(
        id=row.instance_id,
        path=path,
        instruction=instruction(row),
        image=image,
        setup=tuple(setup if any(line.strip() for line in before) else ()),
        workdir=WORKDIR,
        solution=(SolutionStep(command=apply_command(row.patch)),) if row.patch else (),
        test_files={**scripts, VERIFIER_SCRIPT: verifier_script(row)},
        verifier_command=f"bash /tests/{VERIFIER_SCRIPT}",
        verifier_timeout_s=VERIFIER_TIMEOUT_S,
        results="swebench-pro",
        required_tests=tuple(dict.fromkeys([*row.fail_to_pass, *row.pass_to_pass])),
        git_history=GitHistory(repo=WORKDIR, base_commit=row.base_commit),
    )


def _image(data: dict[str, Any], row: ProRow, where: str) -> str:
    """The row's own image field where it has one (as other rows name theirs: a mirror, a
    local registry), else the publisher's image for its tag."""
    for name in IMAGE_FIELDS:
        value = data.get(name)
        if isinstance(value, str) and value.strip():
            return image_reference(value, f"{where}: {name}")
    return image_reference(f"{IMAGE_REPOSITORY}:{row.dockerhub_tag}", f"{where}: dockerhub_tag")


def load_swebench_pro(
    path: str | Path, *, run_scripts: str | Path | None = None
) -> list[Task | TaskError]:
    """One Task, or the TaskError naming what is wrong with it, per row of a .jsonl or
    .parquet file. No run_scripts folder (neither `run_scripts` nor one beside the file) is
    one TaskError for the whole file."""
    path = Path(path).resolve()
    folder = Path(run_scripts) if run_scripts is not None else path.parent / RUN_SCRIPTS
    if not folder.is_dir():
        given = f"--run-scripts {folder}" if run_scripts is not None else f"no {folder}"
        raise TaskError(
            f"{path}: {given}: not a folder (SWE-bench Pro's run_scripts/, from the publisher's "
            "repository, beside the file or named by --run-scripts)"
        )
    folder = folder.resolve()
    return instance_tasks(path, lambda data, where: pro_task(data, where, path, folder))


def holds_pro_rows(path: Path) -> bool:
    """Whether a `.jsonl` or `.parquet` file holds SWE-bench Pro rows: its fields say."""
    return bool(fields(path) & set(PRO_FIELDS))
