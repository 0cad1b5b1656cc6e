"""The task model: what sprout needs to run, verify and replay one task, whatever its source."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ResultsFormat = Literal["auto", "reward", "ctrf", "junit", "pytest", "tap", "exit-code"]


class TaskError(ValueError):
    """A task that cannot be read; the message names the task, the file and the field."""


class SetupStep(BaseModel):
    """One step that builds the task's base layer (from the Dockerfile, or given directly)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["run", "copy"]
    command: str = ""
    """For `run`: a shell command, run in `workdir`."""
    source: str = ""
    """For `copy`: a path relative to the task's environment folder."""
    destination: str = ""
    """For `copy`: an absolute path inside the sandbox."""
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


class Task(BaseModel):
    """A task: an instruction, an environment, a reference solution and hidden tests."""

    model_config = ConfigDict(frozen=True)

    id: str
    path: Path
    instruction: str
    image: str = "host"
    """"host", the absolute path of a root-filesystem folder, or an image name of the
    machine's image cache (`python:3.11-slim`), built or imported before the task runs."""
    setup: tuple[SetupStep, ...] = ()
    environment_dir: Path | None = None
    """Where COPY sources are read from."""
    workdir: str = "/workspace"
    env: dict[str, str] = Field(default_factory=dict)
    network: bool = True
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
    warnings: tuple[str, ...] = ()
    """What the loader had to guess (an unmapped FROM image, say), to show the user."""

    @field_validator("test_files")
    @classmethod
    def _relative_names(cls, files: dict[str, str]) -> dict[str, str]:
        for name in files:
            parts = PurePosixPath(name).parts
            if not parts or name.startswith("/") or ".." in parts:
                raise ValueError(f"test file {name!r}: expected a relative path inside /tests")
        return files
