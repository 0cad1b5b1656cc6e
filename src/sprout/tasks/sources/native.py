"""The native task folder: the Terminal-Bench 2 / Harbor layout plus a `[sprout]` table.

    TASK/instruction.md        what the agent is asked to do
    TASK/task.toml             Harbor's [environment], [agent], [verifier] and [solution]
                               (`sprout.tasks.sources.harbor_tables`), and [sprout] (below)
    TASK/environment/          Dockerfile and the files it copies
    TASK/solution/solve.sh     the reference solution; `# step` lines split it into turns
                               (`sprout.tasks.sources.solution_script`)
    TASK/tests/test.sh         hidden tests, copied to /tests on the verifier's fork only

See docs/tasks.md for every field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from sprout.sandbox import Network
from sprout.task import ResultsFormat, SetupStep, Stage, Task, TaskError
from sprout.tasks.dockerfile.parse import DockerfilePlan, plan_dockerfile
from sprout.tasks.files import (
    has_file,
    only_plain_files,
    optional_text,
    read_text,
    read_toml,
    subfolder,
    task_table,
)
from sprout.tasks.imageref import cached_env, image_reference, task_image
from sprout.tasks.sources.compose import read_compose
from sprout.tasks.sources.harbor_env import harbor_variables
from sprout.tasks.sources.harbor_tables import (
    AllowedHosts,
    EnvironmentTable,
    EnvTable,
    PhaseTable,
    SolutionTable,
    VerifierTable,
    network_of,
    phase_networks,
)
from sprout.tasks.sources.solution_script import split_solution


def _network_word(value: object) -> object:
    if isinstance(value, bool):
        return "public" if value else "none"
    if value in ("public", "none", "allowlist"):
        return value
    raise ValueError(f'expected true, false, "public", "none" or "allowlist", got {value!r}')


SproutNetwork = Annotated[Literal["public", "none", "allowlist"], BeforeValidator(_network_word)]
"""`[sprout] network`'s words; true is "public", false "none"."""


class SproutTable(BaseModel):
    """The `[sprout]` table of task.toml: what sprout needs beyond the harness's fields."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = None
    """"host" or a root-filesystem folder (relative to the task); default: from FROM."""
    workdir: str | None = None
    """The agent's directory; default: the Dockerfile's last WORKDIR, else /workspace."""
    network: SproutNetwork | None = None
    """The agent's network: true or "public", false or "none", or "allowlist" (of `allow`);
    default: `[agent] network_mode`, else `[environment]`'s, else public."""
    setup_network: SproutNetwork | None = None
    """The set-up steps' network, as `network`; default public, as `docker build` has."""
    allow: AllowedHosts = []
    """The hosts an "allowlist" above reaches (`pypi.org`, `*.pythonhosted.org:443`)."""
    results: ResultsFormat = "auto"
    required_tests: list[str] | None = None
    verifier_command: str | None = None
    """Replaces `bash /tests/test.sh`, e.g. to run the test files with a local pytest offline."""
    setup: list[str] = []
    """Extra shell steps after the Dockerfile's."""
    env: EnvTable = {}
    user_namespaces: bool = False
    """Let the agent's commands make user namespaces (to run containers of their own)."""
    build_args: dict[str, str] = {}
    """The Dockerfile's ARG values (`docker build --build-arg`), over docker-compose.yaml's."""

    def network_setting(self, value: SproutNetwork | None) -> Network:
        """`network` or `setup_network` as a sandbox's `network` (None: public)."""
        if value == "allowlist":
            return network_of("allowlist", self.allow)
        return network_of("no-network" if value == "none" else "public", None)


@dataclass(frozen=True)
class TaskEnvironment:
    """Where a task's agent runs: what its Dockerfile and `[sprout]` table say together."""

    image: str
    workdir: str
    env: dict[str, str]
    steps: tuple[SetupStep, ...]
    warnings: tuple[str, ...]
    stages: tuple[Stage, ...] = ()
    user: str = ""
    user_origin: str = ""


def task_environment(
    task_id: str,
    sprout: SproutTable,
    settings_file: Path,
    dockerfile: Path,
    context: Path,
    root: Path,
    images: Mapping[str, str] | None,
) -> TaskEnvironment:
    """The image, workdir, environment and set-up steps of a task, for every folder format.

    `[sprout]` fields win over the Dockerfile's; `image` is "host", a folder (relative to
    `root`) or an image name (`task_image`). Build args come from the docker-compose.yaml
    beside the Dockerfile (its task service's `build.args`, as Harbor builds it), then
    `[sprout] build_args`. An image that only approximates the one named is a warning.
    Errors start with the task's id, as every loader error does.
    """
    compose = read_compose(dockerfile.parent / "docker-compose.yaml", task_id)
    override = None
    if sprout.image:
        override = task_image(sprout.image, root, None, f"{task_id}: {settings_file}: sprout.image")
    build_args = {**compose.build_args, **sprout.build_args}
    plan = _plan(task_id, dockerfile, context, images, build_args, override)
    image = override or task_image(plan.image, root, images, f"{task_id}: {dockerfile}")
    workdir = sprout.workdir or plan.workdir or "/workspace"
    if not workdir.startswith("/"):
        raise TaskError(f"{task_id}: {settings_file}: sprout.workdir: {workdir!r} is not absolute")
    env = {**plan.env, **sprout.env}
    steps = [_relative_origin(step, root) for step in plan.steps]
    steps += [
        SetupStep(
            kind="run",
            command=command,
            workdir=workdir,
            env=env,
            origin=f"{settings_file.name} sprout.setup[{index}]",
        )
        for index, command in enumerate(sprout.setup)
    ]
    warnings = [*plan.warnings, *compose.warnings]
    stages = _stages(task_id, plan, dockerfile, root, images)
    return TaskEnvironment(
        image,
        workdir,
        env,
        tuple(steps),
        tuple(warnings),
        stages,
        plan.user,
        plan.user_origin.removeprefix(f"{root}/"),
    )


def task_fields(setting: TaskEnvironment, sprout: SproutTable) -> dict[str, Any]:
    """The Task's fields that its environment and its `[sprout]` table decide, alike in every
    folder format that has both (native, Terminal-Bench 1); the loader adds the rest."""
    return {
        "image": setting.image,
        "setup": setting.steps,
        "stages": setting.stages,
        "user": setting.user,
        "user_origin": setting.user_origin,
        "workdir": setting.workdir,
        "env": setting.env,
        "declared_env": dict(sprout.env),
        "network": sprout.network_setting(sprout.network),
        "setup_network": sprout.network_setting(sprout.setup_network),
        "user_namespaces": sprout.user_namespaces,
        "required_tests": tuple(sprout.required_tests) if sprout.required_tests else None,
    }


def _plan(
    task_id: str,
    dockerfile: Path,
    context: Path,
    images: Mapping[str, str] | None,
    build_args: Mapping[str, str],
    override: str | None,
) -> DockerfilePlan:
    """The Dockerfile translated (an empty plan on the host image when there is none); its
    last stage's words over `override`'s ENV where `[sprout] image` names one."""
    text = optional_text(dockerfile, task_id)
    if text is None:
        return DockerfilePlan()
    try:
        return plan_dockerfile(
            text,
            where=str(dockerfile),
            images=images,
            context=context,
            build_args=build_args,
            base_env=cached_env,
            final_base=override,
        )
    except TaskError as error:
        raise TaskError(f"{task_id}: {error}") from None


def _stages(
    task_id: str,
    plan: DockerfilePlan,
    dockerfile: Path,
    root: Path,
    images: Mapping[str, str] | None,
) -> tuple[Stage, ...]:
    """The earlier stages, their images checked now too."""
    stages = []
    for stage in plan.stages:
        found = task_image(stage.image, root, images, f"{task_id}: {dockerfile}")
        named = tuple(_relative_origin(step, root) for step in stage.steps)
        stages.append(stage.model_copy(update={"image": found, "steps": named}))
    return tuple(stages)


def _relative_origin(step: SetupStep, root: Path) -> SetupStep:
    """`step` with its origin named from the task's folder (`environment/Dockerfile:4`)."""
    origin = step.origin.removeprefix(f"{root}/")
    return step.model_copy(update={"origin": origin}) if origin != step.origin else step


def load_native(path: str | Path, *, images: Mapping[str, str] | None = None) -> Task:
    """Read a task folder; TaskError names the task, the file and the field at fault."""
    path = Path(path).resolve()
    task_id = path.name
    instruction_file = path / "instruction.md"
    if not has_file(instruction_file, task_id):
        raise TaskError(f"{task_id}: {instruction_file}: missing (every task needs one)")
    instruction = read_text(instruction_file, task_id).strip()
    toml_path = path / "task.toml"
    data = read_toml(toml_path, task_id) or {}
    sprout = task_table(data, "sprout", SproutTable, toml_path, task_id)
    verifier = task_table(data, "verifier", VerifierTable, toml_path, task_id)
    agent = task_table(data, "agent", PhaseTable, toml_path, task_id)
    resources = task_table(data, "environment", EnvironmentTable, toml_path, task_id)
    solution_table = task_table(data, "solution", SolutionTable, toml_path, task_id)
    variables = harbor_variables(
        f"{task_id}: {toml_path}", resources.env, verifier.env, solution_table.env
    )

    environment = path / "environment"
    environment_dir = subfolder(environment, task_id, "the Dockerfile and what it copies")
    setting = task_environment(
        task_id, sprout, toml_path, environment / "Dockerfile", environment, path, images
    )

    solution_dir, tests_dir = _solution_and_tests(path, task_id, sprout)
    script = optional_text(path / "solution" / "solve.sh", task_id)
    solution = split_solution(script, "/solution/solve.sh") if script is not None else ()
    networks = phase_networks(resources, agent, verifier)
    if sprout.network is not None:  # [sprout] network wins over Harbor's tables
        del networks["network"]
    return Task(
        **{
            **task_fields(setting, sprout),
            **networks,
            **variables.task_fields(setting.env, sprout.env),
        },
        id=task_id,
        path=path,
        instruction=instruction,
        environment_dir=environment_dir,
        solution=solution,
        solution_dir=solution_dir,
        tests_dir=tests_dir,
        verifier_command=sprout.verifier_command or "bash /tests/test.sh",
        verifier_timeout_s=verifier.timeout_sec or 900.0,
        agent_timeout_s=agent.timeout_sec,
        agent_user=agent.user,
        verifier_user=verifier.user,
        cpus=resources.cpus,
        memory_bytes=resources.memory_bytes,
        disk_bytes=resources.disk_bytes,
        results=sprout.results,
        warnings=(*setting.warnings, *variables.warnings),
        prebuilt_image=_prebuilt(resources, toml_path, task_id),
    )


def _solution_and_tests(
    path: Path, task_id: str, sprout: SproutTable
) -> tuple[Path | None, Path | None]:
    """The task's `solution/` and `tests/` folders, each copied into sandboxes as it is (so
    only plain files, folders and links inside it), and a verifier to run: `tests/test.sh`
    unless `[sprout] verifier_command` names another."""
    solution_dir = subfolder(path / "solution", task_id, "the reference solution, solve.sh")
    tests_dir = subfolder(path / "tests", task_id, "the hidden tests, test.sh")
    for copied in (solution_dir, tests_dir):
        if copied is not None:
            only_plain_files(copied, task_id)
    if sprout.verifier_command is None and not has_file(path / "tests" / "test.sh", task_id):
        raise TaskError(
            f"{task_id}: {path / 'tests' / 'test.sh'}: missing, and task.toml sets no "
            "sprout.verifier_command"
        )
    return solution_dir, tests_dir


def _prebuilt(resources: EnvironmentTable, toml_path: Path, task_id: str) -> str | None:
    """Harbor's `docker_image`, normalised; a bad reference names the field."""
    if resources.docker_image is None:
        return None
    where = f"{task_id}: {toml_path}: environment.docker_image"
    return image_reference(resources.docker_image, where)
