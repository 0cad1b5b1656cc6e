"""The task model: what sprout needs to run, verify and replay one task, whatever its source."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sprout.errors import SproutError

ResultsFormat = Literal[
    "auto",
    "reward",
    "ctrf",
    "junit",
    "pytest",
    "tap",
    "exit-code",
    "swebench",
    "swebench-pro",
    "r2egym",
    "swe-rebench",
    "swe-smith",
]


class TaskError(SproutError, ValueError):
    """A task that cannot be read; the message names the task, the file and the field."""


class SetupFailed(TaskError):
    """A set-up step that exited non-zero: the message is one line (its last line of output),
    `detail` the command and its last lines, for a person to read."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


class SetupStep(BaseModel):
    """One step that builds the task's base layer (from the Dockerfile, or given directly).

    A `copy` follows Docker's COPY: a directory's contents go into `destination`,
    merged with what is there; a file goes into `destination` when it ends with `/`
    or is a directory already, else becomes it. Copied files belong to root unless
    `chown` says otherwise. A `workdir` makes the directories of `destination` that are
    missing, owned by `user`: BuildKit's WORKDIR after a USER.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["run", "copy", "workdir"]
    command: str = ""
    """For `run`: the command, run in `workdir` by `shell`."""
    shell: tuple[str, ...] = ()
    """For `run`: the program and arguments `command` is appended to (a Dockerfile's `SHELL`,
    `/bin/sh -c` by default); empty: the sandbox's own shell reads it, as for `[sprout]
    setup` steps and a Dockerfile's exec-form `RUN` (whose words are quoted into `command`)."""
    user: str = ""
    """For `run`: who runs it (a Dockerfile's `USER`: `name`, `uid`, `name:group`); "" for
    root. For `workdir`: who owns the directories it makes."""
    source: str = ""
    """For `copy`: a path or wildcard pattern relative to the build context (the task's
    environment folder); with `stage`, an absolute path or pattern in that stage's
    filesystem; an http(s) URL (ADD); with `content`, the name of the file it makes."""
    destination: str = ""
    """For `copy`: an absolute path inside the sandbox; a trailing `/` makes it a directory.
    For `workdir`: the directory."""
    content: str | None = None
    """For `copy`: the file's text, instead of a source (`COPY <<EOF /etc/motd`)."""
    stage: int | None = None
    """For `copy`: the index in `Task.stages` of the stage whose built filesystem `source`
    is read from (`COPY --from`), instead of the build context."""
    unpack: bool = False
    """For `copy` (ADD): a local tar archive (plain, gzip, bzip2 or xz) is unpacked into
    `destination` instead of copied."""
    chown: str = ""
    """For `copy`: `user[:group]` (names or ids, as the image's /etc/passwd and /etc/group
    give them) that the copied files belong to; "" for root."""
    chmod: str = ""
    """For `copy`: the mode (`0755`, `u+x`) of every copied file and directory; "" keeps the
    source's."""
    checksum: str = ""
    """For `copy` of a URL: `sha256:HEX` the download must match (ADD --checksum)."""
    ignore: tuple[str, ...] = ()
    """For `copy` from the build context: its `.dockerignore` patterns, in order (`!` takes a
    path back), relative to the context's root; what they match is not copied."""
    workdir: str = "/"
    env: dict[str, str] = Field(default_factory=dict)
    origin: str = ""
    """Where the step comes from, for its errors: `environment/Dockerfile:4`, `task.toml
    sprout.setup[0]`; "" when nothing names it. Not part of what the base layer depends on:
    a comment added above a line changes no layer."""


class Stage(BaseModel):
    """An earlier stage of a multi-stage Dockerfile (`FROM golang AS builder`): its own image
    and steps, built in a sandbox of its own so that `COPY --from` takes files out of it
    while the rest of it stays out of the task's filesystem. A `COPY --from` naming an image
    rather than a stage is a stage with no steps."""

    model_config = ConfigDict(frozen=True)

    name: str = ""
    """The name after `AS` (lower-cased, as Docker matches it); "" when it has none."""
    image: str = "host"
    """As `Task.image`: "host", a root-filesystem folder, or an image name."""
    steps: tuple[SetupStep, ...] = ()
    workdir: str = "/"
    env: dict[str, str] = Field(default_factory=dict)


class SolutionStep(BaseModel):
    """One turn of the reference solution, with the wrong variants a task may offer."""

    model_config = ConfigDict(frozen=True)

    command: str
    wrong: tuple[str, ...] = ()
    trap: str | None = None
    """A misconception (`# trap:`): a wrong variant that passes every visible check and fails
    only at the verifier; only the oracle models read it (the simulation's error model)."""
    trap_names: tuple[str, ...] = ()
    """What the verifier names when the trap fails (`# trap names:`): a test id, a file."""


class SweBenchGrading(BaseModel):
    """What SWE-bench's own harness needs to grade a verifier log (the `swebench` package's
    TestSpec, less the image and the script, which the task carries itself)."""

    model_config = ConfigDict(frozen=True)

    instance_id: str
    repo: str
    version: str = ""
    log_parser: str
    """The name of the package's parser for the repository's test runner
    (`parse_log_django`, `parse_log_sympy`, `parse_log_pytest`, ...)."""
    eval_type: Literal["pass_and_fail", "fail_only"] = "pass_and_fail"
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    log: str = "/logs/verifier/test_output.txt"
    """Where the verifier's command writes the eval script's output."""
    harness: Literal["swebench", "swe-rebench", "swe-gym"] = "swebench"
    """Whose rules read the log: the `swebench` package's (SWE-bench's own rows), or those of
    the older fork a dataset was published with, SWE-rebench V1's or SWE-Gym's
    (`sprout.verify.swebench_fork_grading`)."""


class R2EGymGrading(BaseModel):
    """What R2E-Gym's reward compares the test log with: the row's `expected_output_json`,
    each hidden test's status once the fix is in (FAILED for a test expected to fail)."""

    model_config = ConfigDict(frozen=True)

    expected: dict[str, str]
    log: str = "/logs/verifier/run_tests.log"
    """Where the verifier's command writes run_tests.sh's output."""


class RebenchGrading(BaseModel):
    """What SWE-rebench V2's evaluation reads a test log with: the parser its row names
    (`install_config.log_parser`, found in `sprout.logparsers`) and the tests that must
    pass, exactly those."""

    model_config = ConfigDict(frozen=True)

    log_parser: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    logs: tuple[str, str] = ("/logs/verifier/stdout.log", "/logs/verifier/stderr.log")
    """Where the verifier's command writes the test commands' stdout and stderr, which the
    parser reads one after the other, as the publisher's harness joins them."""


class SweSmithGrading(BaseModel):
    """What SWE-smith's own grader needs: the interpreter that has the swesmith package
    (`--swe-smith`) and the instance's fields it reads."""

    model_config = ConfigDict(frozen=True)

    python: str
    instance: dict[str, Any]
    log: str = "/logs/verifier/test_output.txt"
    """Where the verifier's command writes the eval script's output."""


class GitHistory(BaseModel):
    """The repository an image-based row's task works in, and the commit it starts from.

    Published images often keep the repository's whole history, so the fix would be one
    `git log --all` away: checkpoint 0 keeps no git object, ref or reflog entry but this
    commit and its ancestors, and only the verifier's fork gets the rest back (a grader
    may check test files out of the fix's commit)."""

    model_config = ConfigDict(frozen=True)

    repo: str = Field(pattern=r"^/")
    """The repository's folder in the image (`/testbed`, `/app`)."""
    base_commit: str = Field(pattern=r"^[0-9a-f]{40}$")


class Task(BaseModel):
    """A task: an instruction, an environment, a reference solution and hidden tests."""

    model_config = ConfigDict(frozen=True)

    id: str
    path: Path
    instruction: str
    image: str = "host"
    """"host", the absolute path of a root-filesystem folder, or an image reference
    (`python:3.11-slim`, `ghcr.io/o/x@sha256:...`): from the machine's image cache, else
    pulled, else approximated, as `image_mode` allows (`sprout.images.names.choose_image`)."""
    image_mode: Literal["pull", "cache", "approximate"] = "pull"
    """Where this task's images may come from (`--images`); a run that had to approximate
    an image sets `approximate`, so that every node of a cluster builds the same one."""
    prebuilt_image: str | None = None
    """Harbor's `[environment] docker_image`: the task's whole environment, prebuilt. When
    the run gets it, it replaces `image`, the set-up steps and the stages."""
    setup: tuple[SetupStep, ...] = ()
    stages: tuple[Stage, ...] = ()
    """The Dockerfile's earlier stages that `setup` copies files out of (`SetupStep.stage`)."""
    environment_dir: Path | None = None
    """Where COPY sources are read from."""
    user: str = ""
    """The Dockerfile's last `USER` ("" when it sets none: root): the agent's commands, the
    oracle's solution and the verifier run as it (unless `agent_user` or `verifier_user` says
    otherwise), as Harbor runs them in the task's container; resolved through the base
    layer's /etc/passwd and /etc/group."""
    user_origin: str = ""
    """Where `user` comes from (`environment/Dockerfile:7`), for the error when the image has
    no such user."""
    agent_user: str | None = None
    """task.toml's `[agent] user`: who the agent's commands and the oracle's solution run as,
    instead of `user`; None: `user`."""
    verifier_user: str | None = None
    """task.toml's `[verifier] user`: who the verifier runs as (`root` to let it read what the
    agent cannot); None: `user`, the image's default, as Harbor runs it. The agent never runs
    as it unless it is the agent's own."""
    workdir: str = "/workspace"
    env: dict[str, str] = Field(default_factory=dict)
    """The agent's variables: the Dockerfile's ENV, then task.toml's (`declared_env`)."""
    declared_env: dict[str, str] = Field(default_factory=dict)
    """What task.toml itself sets (`[environment] env`, then `[sprout] env`): what a prebuilt
    image's own ENV gets instead of the Dockerfile's."""
    verifier_env: dict[str, str] = Field(default_factory=dict)
    """`[verifier] env`: the verifier's alone, over the attempt's variables."""
    solution_env: dict[str, str] = Field(default_factory=dict)
    """`[solution] env`: in the oracle models' sandboxes only, with /solution."""
    network: bool | tuple[str, ...] = True
    """The agent's network, which its forks inherit: true is `public`, false `none`, a tuple
    of hosts (`pypi.org`, `*.pythonhosted.org:443`) an `allowlist` of them."""
    verifier_network: bool | tuple[str, ...] = True
    """The verifier's (Terminal-Bench 2's test.sh fetches its runner)."""
    setup_network: bool | tuple[str, ...] = True
    """The set-up steps' (the Dockerfile's RUN and `[sprout] setup`), as `docker build` has
    the network."""
    user_namespaces: bool = False
    """The agent's commands may make user namespaces of their own (off: refused)."""
    solution: tuple[SolutionStep, ...] = ()
    solution_dir: Path | None = None
    """The task's `solution/` folder: at /solution in the oracle's sandboxes only."""
    tests_dir: Path | None = None
    """Copied to /tests on the verifier's fork only, never visible to the agent."""
    test_files: dict[str, str] = Field(default_factory=dict)
    """Generated hidden files (relative name -> text), written under /tests after `tests_dir`:
    for formats whose tests are not a folder, such as a SWE-bench test patch."""
    verifier_command: str = "bash /tests/test.sh"
    verifier_timeout_s: float = 900.0
    agent_timeout_s: float | None = None
    cpus: float | None = None
    """CPUs the agent's sandbox may use ([environment] cpus); None: the sandbox's default."""
    memory_bytes: int | None = None
    """Memory of the agent's sandbox ([environment] memory_mb or memory); None: default."""
    disk_bytes: int | None = None
    """Bytes the agent may write ([environment] storage_mb or storage); None: default."""
    results: ResultsFormat = "auto"
    required_tests: tuple[str, ...] | None = None
    swebench: SweBenchGrading | None = None
    """With `results = "swebench"`: how SWE-bench's harness grades the log."""
    git_history: GitHistory | None = None
    """An image-based row's repository and base commit: its later history is cut from
    checkpoint 0 (`sprout.tasks.setup`); None for tasks whose environment has none to cut."""
    r2egym: R2EGymGrading | None = None
    """With `results = "r2egym"`: the statuses R2E-Gym's reward compares the log with."""
    swesmith: SweSmithGrading | None = None
    """With `results = "swe-smith"`: what SWE-smith's grader reads the log with."""
    rebench: RebenchGrading | None = None
    """With `results = "swe-rebench"`: the parser and the tests SWE-rebench V2 grades by."""
    withheld: tuple[str, ...] = ()
    """Absolute paths the image holds that the agent must not see (an image's own hidden
    tests): taken out of checkpoint 0 at the end of set-up and put back at the same paths on
    the verifier's fork only (`sprout.tasks.setup.withheld`)."""
    warnings: tuple[str, ...] = ()
    """What the loader had to guess (an unmapped FROM image, say), to show the user."""

    @field_validator("withheld")
    @classmethod
    def _absolute_paths(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        for path in paths:
            parts = PurePosixPath(path).parts
            if not path.startswith("/") or len(parts) < 2 or ".." in parts:
                raise ValueError(f"withheld {path!r}: expected an absolute path below /")
        return paths

    @field_validator("test_files")
    @classmethod
    def _relative_names(cls, files: dict[str, str]) -> dict[str, str]:
        for name in files:
            parts = PurePosixPath(name).parts
            if not parts or name.startswith("/") or ".." in parts:
                raise ValueError(f"test file {name!r}: expected a relative path inside /tests")
        return files
