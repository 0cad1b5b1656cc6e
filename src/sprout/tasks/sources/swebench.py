"""SWE-bench JSONL: one task per line, on its own image (`swebench_rows`) or over local
clones of the repositories (`--repos`).

A line holds instance_id, repo ("owner/name"), base_commit, problem_statement, test_patch,
the gold patch (optional), FAIL_TO_PASS and PASS_TO_PASS. The base layer is the repository
at base_commit in /testbed, fetched from the local clone without the network and without the
commits after base_commit, so the fix is not in the agent's history. The test patch and a
generated test.sh reach only the verifier's fork; the gold patch is the oracle's one turn.

An optional sidecar beside FILE.jsonl, FILE.sprout.toml, sets the image, set-up steps (such
as `pip install -e .`) and the pytest command, for every line (`[sprout]`) or per repository
(`[repos."owner/name"]`, `[repos."owner/name@VERSION"]`). See docs/tasks.md.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sprout.config import only_tables, validate_table
from sprout.task import SetupStep, SolutionStep, Task, TaskError
from sprout.tasks.files import naming_task, read_toml
from sprout.tasks.imageref import task_image
from sprout.tasks.sources.rows import lone_surrogate, rows
from sprout.tasks.sources.swebench_rows import (
    SweBenchInstance,
    apply_command,
    image_row_task,
    is_image_row,
)

WORKDIR = "/testbed"
COPIED_CLONE = "/tmp/sprout-clone.git"
"""Where a clone is copied for an image that cannot see the host's files."""
UPLOAD_PACK = "git -c safe.directory='*' upload-pack"
"""The clone may belong to another user than the sandbox's root: git would refuse to read it."""


class SweBenchRecord(SweBenchInstance):
    """A row over a local clone: its commit and its test patch besides."""

    base_commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    test_patch: str = Field(min_length=1)


class SweBenchSettings(BaseModel):
    """A `[sprout]` or `[repos."owner/name"]` table of the sidecar; a repository's table
    replaces the fields it sets."""

    model_config = ConfigDict(extra="forbid", strict=True)

    image: str | None = None
    """"host", a name from the --images table, a root-filesystem folder (relative to the
    sidecar) or an image name (python:3.11-slim). Default "host"."""
    setup: list[str] | None = None
    """Shell steps in /testbed after the checkout, such as `pip install -e .`."""
    env: dict[str, str] | None = None
    network: bool | None = None
    """The agent's network; the set-up steps always have it."""
    pytest: str | None = None
    """How the verifier runs pytest; default `python3 -m pytest`."""
    verifier_timeout_sec: float | None = Field(default=None, gt=0)
    agent_timeout_sec: float | None = Field(default=None, gt=0)


DEFAULTS = SweBenchSettings(
    image="host", setup=[], env={}, network=True, pytest="python3 -m pytest"
)
VERIFIER_TIMEOUT_S = 1800.0


def sidecar_path(jsonl: Path) -> Path:
    """FILE.jsonl's sidecar: FILE.sprout.toml in the same folder."""
    return jsonl.with_name(jsonl.name.removesuffix(".jsonl") + ".sprout.toml")


def read_sidecar(path: Path) -> dict[str, SweBenchSettings]:
    """The sidecar's tables by key: "" for `[sprout]`, "owner/name[@version]" for a repository."""
    data = read_toml(path, None)
    if data is None:
        return {}
    with naming_task(None):
        only_tables(data, ["sprout", "repos"], path, 'use [sprout] or [repos."o/n"] tables')
        tables: dict[str, object] = {"": data.get("sprout", {})}
        repos = data.get("repos", {})
        if not isinstance(repos, dict):
            raise TaskError(f'{path}: repos: expected tables named "owner/name"')
        tables.update(repos)
        return {
            key: validate_table(table, SweBenchSettings, path=path, table=_label(key))
            for key, table in tables.items()
        }


def _settings_for(
    record: SweBenchRecord, tables: Mapping[str, SweBenchSettings]
) -> SweBenchSettings:
    merged = DEFAULTS.model_dump()
    keys = ["", record.repo] + ([f"{record.repo}@{record.version}"] if record.version else [])
    for key in keys:
        if key in tables:
            merged.update(tables[key].model_dump(exclude_unset=True))
    return SweBenchSettings.model_validate(merged)


def _image(value: str, images: Mapping[str, str], sidecar: Path, label: str) -> str:
    """ "host", the folder the --images table gives a name, a folder beside the sidecar, or
    an image name (`task_image`)."""
    return task_image(value, sidecar.parent, images, f"{sidecar}: {label}.image")


def _label(key: str) -> str:
    return f"repos.{json.dumps(key)}" if key else "sprout"


def find_clone(repos: Path, repo: str) -> Path | None:
    """The local clone of "owner/name": repos/owner__name, repos/name or repos/owner/name."""
    owner, name = repo.split("/", 1)
    for candidate in (repos / f"{owner}__{name}", repos / name, repos / owner / name):
        bare = (candidate / "HEAD").is_file() and (candidate / "objects").is_dir()
        if (candidate / ".git").exists() or bare:
            return candidate.resolve()
    return None


def patch_files(patch: str) -> list[tuple[str | None, str | None]]:
    """(path before, path after) of each file a git patch touches; None for a created or
    deleted file's missing side. Read from the headers only, never from hunk lines."""
    files: list[list[str | None]] = []
    for line in patch.splitlines():
        if line.startswith("diff --git a/"):
            old, _, new = line[len("diff --git a/") :].partition(" b/")
            files.append([old, new])
        elif files and line.startswith("new file mode"):
            files[-1][0] = None
        elif files and line.startswith("deleted file mode"):
            files[-1][1] = None
        elif files and line.startswith("rename from "):
            files[-1][0] = line[len("rename from ") :]
        elif files and line.startswith("rename to "):
            files[-1][1] = line[len("rename to ") :]
    return [(old, new) for old, new in files]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _words(paths: list[str]) -> str:
    return " ".join(shlex.quote(p) for p in paths)


def verifier_script(record: SweBenchRecord, pytest: str) -> str:
    """The verifier: restore what the test patch touches, apply it, run the tests with -rA."""
    touched = patch_files(record.test_patch)
    restore = _unique([old for old, _ in touched if old])
    created = _unique([new for old, new in touched if old is None and new])
    required = record.FAIL_TO_PASS + record.PASS_TO_PASS
    # Run the files the required tests live in (pytest ids), else the patch's Python files.
    run = _unique([name.split("::")[0] for name in required if "::" in name]) or _unique(
        [new for _, new in touched if new and new.endswith(".py")]
    )
    lines = [
        "#!/bin/bash",
        f"# The verifier of SWE-bench instance {record.instance_id}, written by sprout.",
        f"cd {WORKDIR} || exit 1",
    ]
    if restore:
        lines.append(f"git checkout --quiet {record.base_commit} -- {_words(restore)}")
    if created:
        lines.append(f"rm -rf -- {_words(created)}")
    lines += [
        "git apply --verbose /tests/test.patch || "
        "{ echo 'sprout: the test patch does not apply'; exit 1; }",
        f"{pytest} -rA --rootdir={WORKDIR} -p no:cacheprovider {_words(run)}".rstrip(),
    ]
    return "\n".join(lines) + "\n"


def _checkout_steps(record: SweBenchRecord, clone: Path) -> list[SetupStep]:
    """The repository at base_commit in /testbed, fetched from the clone: no network, and
    none of the commits after base_commit. No image shows the host's files, so the clone's
    history is copied in for the fetch and removed before the layer is sealed."""
    commit = record.base_commit
    git_dir = ".git" if (clone / ".git").is_dir() else "."
    fetch = (
        f"git -C {WORKDIR} fetch --quiet --no-tags --upload-pack={shlex.quote(UPLOAD_PACK)} "
        f"{COPIED_CLONE} {commit}"
    )
    hint = shlex.quote(f"sprout: commit {commit} is not in {clone}: fetch it there")
    missing = f"echo {hint} >&2; exit 1"
    return [
        SetupStep(kind="copy", source=git_dir, destination=COPIED_CLONE),
        SetupStep(
            kind="run",
            command=(
                # the fetch's output is printed before the hint, never after it: git's
                # upload-pack child may still be writing when the fetch itself fails
                f"git init --quiet {WORKDIR} && {{ out=$({fetch} 2>&1) || "
                f"{{ printf '%s\\n' \"$out\" >&2; {missing}; }}; }}"
                f" && git -C {WORKDIR} checkout --quiet --detach {commit}"
                f" && rm -f {WORKDIR}/.git/FETCH_HEAD && rm -rf {COPIED_CLONE}"
            ),
            workdir=WORKDIR,
        ),
    ]


def task_from_record(
    record: SweBenchRecord,
    *,
    clone: Path,
    settings: SweBenchSettings,
    image: str,
    path: Path,
    warnings: tuple[str, ...] = (),
) -> Task:
    """The task of one validated line; `image` is already resolved (`task_image`)."""
    env = settings.env or {}
    steps = _checkout_steps(record, clone)
    steps += [
        SetupStep(kind="run", command=c, workdir=WORKDIR, env=env) for c in settings.setup or []
    ]
    return Task(
        id=record.instance_id,
        path=path,
        instruction=record.problem_statement.strip(),
        image=image,
        setup=tuple(steps),
        environment_dir=clone,
        workdir=WORKDIR,
        env=env,
        network=settings.network is not False,
        solution=(SolutionStep(command=apply_command(record.patch)),) if record.patch else (),
        test_files={
            "test.patch": record.test_patch,
            "test.sh": verifier_script(record, settings.pytest or "python3 -m pytest"),
        },
        verifier_command="bash /tests/test.sh",
        verifier_timeout_s=settings.verifier_timeout_sec or VERIFIER_TIMEOUT_S,
        agent_timeout_s=settings.agent_timeout_sec,
        results="pytest",
        required_tests=tuple(_unique(record.FAIL_TO_PASS + record.PASS_TO_PASS)),
        warnings=warnings,
    )


def _row_task(
    data: dict[str, Any],
    where: str,
    *,
    repos: Path | None,
    tables: Mapping[str, SweBenchSettings],
    images: Mapping[str, str],
    path: Path,
) -> Task:
    broken = lone_surrogate(data)
    instance = data.get("instance_id")
    label = instance if isinstance(instance, str) and instance and broken != "instance_id" else "?"
    if broken is not None:
        raise TaskError(
            f"{label}: {where}: {broken}: not valid Unicode (a \\u escape of half a "
            "surrogate pair, which no UTF-8 text can hold)"
        )
    if is_image_row(data):
        return image_row_task(data, where, path, label)
    if repos is None:
        raise TaskError(
            f"{label}: {where}: the row has no eval_script and log_parser (SWE-bench's own "
            "images and grading); pass --repos FOLDER with a clone of its repository, or "
            "--swe-gym DIR for SWE-Gym's rows"
        )
    try:
        record = SweBenchRecord.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise TaskError(f"{label}: {where}: {field}: {first['msg']}") from None
    clone = find_clone(repos, record.repo)
    if clone is None:
        owner, name = record.repo.split("/", 1)
        raise TaskError(
            f"{label}: {where}: repo: no clone of {record.repo} in {repos} "
            f"(looked for {owner}__{name}, {name} and {owner}/{name})"
        )
    settings = _settings_for(record, tables)
    image = _image(settings.image or "host", images, sidecar_path(path), "sprout")
    if image != "host" and (clone / ".git").is_file():
        raise TaskError(
            f"{label}: {where}: repo: {clone}/.git is a file (a worktree); an image other "
            "than host needs a plain clone"
        )
    return task_from_record(
        record,
        clone=clone,
        settings=settings,
        image=image,
        path=path,
    )


def load_swebench(
    path: str | Path, *, repos: str | Path | None, images: Mapping[str, str] | None = None
) -> list[Task | TaskError]:
    """One Task, or the TaskError that names what is wrong with it, per non-blank line.
    Rows with the harness's eval_script and log_parser need no clone (`swebench_rows`).

    A broken sidecar or a missing repos folder is one TaskError raised for the whole file.
    """
    path = Path(path).resolve()
    repos = Path(repos).resolve() if repos is not None else None
    if repos is not None and not repos.is_dir():
        raise TaskError(f"{path}: --repos {repos} is not a folder")
    tables = read_sidecar(sidecar_path(path))
    for key, table in tables.items():  # a bad image is the sidecar's error, found up front
        if table.image is not None:
            _image(table.image, images or {}, sidecar_path(path), _label(key))
    results: list[Task | TaskError] = []
    for where, data in rows(path):
        try:
            if isinstance(data, TaskError):
                raise data
            task = _row_task(
                data, where, repos=repos, tables=tables, images=images or {}, path=path
            )
        except TaskError as error:
            results.append(error)
        else:
            results.append(task)
    return results
