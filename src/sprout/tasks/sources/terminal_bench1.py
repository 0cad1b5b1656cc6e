"""Terminal-Bench 1 task folders, read as they are, with an optional sprout.toml beside them.

    TASK/task.yaml            instruction, parser_name, max_agent_timeout_sec, max_test_timeout_sec
    TASK/Dockerfile           the environment; the task folder is its build context
    TASK/docker-compose.yaml  the client service's build args; other services: a warning
    TASK/run-tests.sh         the verifier: `bash /tests/run-tests.sh` with TEST_DIR=/tests
    TASK/tests/               hidden tests, copied with run-tests.sh to /tests on the fork only
    TASK/solution.sh          the reference solution (`# step` lines split it into turns)
    TASK/solution.yaml        or: a list of commands, one turn each
    TASK/sprout.toml          optional `[sprout]` table, the same as a native task.toml's

See docs/tasks.md for what maps to what.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sprout.config import only_tables
from sprout.task import ResultsFormat, SolutionStep, Task, TaskError
from sprout.tasks.files import (
    has_file,
    naming_task,
    only_plain_files,
    optional_text,
    read_toml,
    subfolder,
    task_table,
)
from sprout.tasks.sources.compose import read_yaml
from sprout.tasks.sources.native import (
    SproutTable,
    TaskEnvironment,
    task_environment,
    task_fields,
)
from sprout.tasks.sources.solution_script import split_solution

AGENT_TIMEOUT_S = 360.0
"""Terminal-Bench 1's default max_agent_timeout_sec."""
TEST_TIMEOUT_S = 60.0
"""Terminal-Bench 1's default max_test_timeout_sec."""
PARSERS: dict[str, ResultsFormat] = {"pytest": "pytest"}
"""TB1 parser names sprout can read; others need `results` in sprout.toml."""
TESTS = "/tests"
HIDDEN = ("tests", "run-tests.sh", "solution.sh", "solution.yaml")
"""What a COPY of the whole folder would leak into the agent's environment."""


def _positive(data: Mapping[str, object], key: str, where: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise TaskError(f"{where}: {key}: expected a positive number, got {value!r}")
    return float(value)


def _instruction(data: Mapping[str, object], where: str) -> str:
    """`instruction`, or the `base` entry of the older `descriptions` list."""
    text = data.get("instruction")
    descriptions = data.get("descriptions")
    if text is None and isinstance(descriptions, list):
        for entry in descriptions:
            if isinstance(entry, dict) and entry.get("key") == "base":
                text = entry.get("description")
    if not isinstance(text, str) or not text.strip():
        raise TaskError(f"{where}: instruction: expected a non-empty string, got {text!r}")
    return text.strip()


def _check_metadata(data: Mapping[str, object], where: str) -> None:
    """Fields sprout does not use, checked anyway: a mistyped one hints at a broken file."""
    for key in ("author_email", "author_name", "difficulty", "category"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise TaskError(f"{where}: {key}: expected a string, got {data[key]!r}")
    tags = data.get("tags")
    if tags is not None and not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        raise TaskError(f"{where}: tags: expected a list of strings, got {tags!r}")
    same_shell = data.get("run_tests_in_same_shell")
    if same_shell is not None and not isinstance(same_shell, bool):
        raise TaskError(f"{where}: run_tests_in_same_shell: expected true or false")


def _overrides(path: Path, task_id: str) -> SproutTable:
    """The `[sprout]` table of sprout.toml, when the folder has one."""
    data = read_toml(path, task_id) or {}
    with naming_task(task_id):
        only_tables(data, ["sprout"], path, "put fields in a [sprout] table")
    return task_table(data, "sprout", SproutTable, path, task_id)


def _solution(folder: Path, task_id: str) -> tuple[SolutionStep, ...]:
    """solution.sh split at `# step` lines, or solution.yaml's commands, one turn each."""
    script = optional_text(folder / "solution.sh", task_id)
    if script is not None:
        return split_solution(script)
    listed = folder / "solution.yaml"
    if not has_file(listed, task_id):
        return ()
    entries = read_yaml(listed, task_id)
    if not isinstance(entries, list):
        raise TaskError(f"{task_id}: {listed}: expected a list of commands")
    steps = []
    for index, entry in enumerate(entries):
        # TB1 entries are {command, block, append_enter, min_timeout_sec}: keystrokes sent to
        # tmux. sprout runs each as a shell command instead.
        command = entry.get("command") if isinstance(entry, dict) else entry
        if not isinstance(command, str) or not command.strip():
            raise TaskError(f"{task_id}: {listed}: [{index}].command: expected a non-empty string")
        steps.append(SolutionStep(command=command.strip()))
    return tuple(steps)


def _results(
    data: Mapping[str, object], sprout: SproutTable, where: str, toml: Path
) -> ResultsFormat:
    """How the verifier's output is read: sprout.toml's `results`, else TB1's parser_name."""
    parser = data.get("parser_name", "pytest")
    if "results" in sprout.model_fields_set:
        return sprout.results
    if isinstance(parser, str) and parser in PARSERS:
        return PARSERS[parser]
    raise TaskError(
        f"{where}: parser_name: {parser!r} is not one sprout reads ({', '.join(PARSERS)}); "
        f"set results in {toml.name}'s [sprout] table"
    )


def _leak_warnings(folder: Path, dockerfile: Path, setting: TaskEnvironment) -> list[str]:
    """A COPY of the whole folder (TB1's context) or of its tests or solution would put what
    the agent must not see into its environment: each is warned of."""
    hidden = [folder / name for name in HIDDEN]
    context_copies = [
        s
        for s in (*setting.steps, *(s for stage in setting.stages for s in stage.steps))
        if s.kind == "copy" and s.content is None and s.stage is None and "://" not in s.source
    ]
    warnings = []
    for step in context_copies:
        source = (folder / step.source).resolve()
        if source == folder or any(h == source or h in source.parents for h in hidden):
            warnings.append(
                f"{dockerfile}: COPY {step.source} puts the hidden tests or the solution in the "
                "agent's environment"
            )
    return warnings


@dataclass(frozen=True)
class _Verifier:
    """TB1's verifier: run-tests.sh and tests/ at /tests, and the command that runs them."""

    tests_dir: Path | None
    run_tests: str | None
    command: str


def _verifier(folder: Path, task_id: str, sprout: SproutTable, toml: Path) -> _Verifier:
    run_tests = folder / "run-tests.sh"
    run_tests_text = optional_text(run_tests, task_id)
    if sprout.verifier_command is None and run_tests_text is None:
        raise TaskError(
            f"{task_id}: {run_tests}: missing, and {toml.name} sets no sprout.verifier_command"
        )
    tests_dir = subfolder(folder / "tests", task_id, "the hidden tests")
    if tests_dir is not None:
        only_plain_files(tests_dir, task_id)  # into the verifier's sandbox as they are
    # TB1's harness copies run-tests.sh and tests/ to /tests and sets TEST_DIR; the command
    # runs in the workdir, which TB1 scripts check is not /.
    command = sprout.verifier_command or f"bash {TESTS}/run-tests.sh"
    return _Verifier(tests_dir, run_tests_text, f"export TEST_DIR={TESTS}; {command}")


def load_terminal_bench1(path: str | Path, *, images: Mapping[str, str] | None = None) -> Task:
    """Read a Terminal-Bench 1 task folder; TaskError names the task, the file and the field."""
    folder = Path(path).resolve()
    task_id = folder.name
    task_yaml = folder / "task.yaml"
    if not has_file(task_yaml, task_id):
        raise TaskError(f"{task_id}: {task_yaml}: missing (a Terminal-Bench 1 task needs one)")
    where = f"{task_id}: {task_yaml}"
    data = read_yaml(task_yaml, task_id)
    if not isinstance(data, dict):
        raise TaskError(f"{where}: expected a mapping of fields, got {type(data).__name__}")
    instruction = _instruction(data, where)
    _check_metadata(data, where)
    agent_timeout = _positive(data, "max_agent_timeout_sec", where)
    test_timeout = _positive(data, "max_test_timeout_sec", where)
    sprout_toml = folder / "sprout.toml"
    sprout = _overrides(sprout_toml, task_id)
    results = _results(data, sprout, where, sprout_toml)
    dockerfile = folder / "Dockerfile"
    setting = task_environment(task_id, sprout, sprout_toml, dockerfile, folder, folder, images)
    verifier = _verifier(folder, task_id, sprout, sprout_toml)
    run_tests = verifier.run_tests
    return Task(
        **task_fields(setting, sprout),
        id=task_id,
        path=folder,
        instruction=instruction,
        environment_dir=folder,
        solution=_solution(folder, task_id),
        tests_dir=verifier.tests_dir,
        test_files={"run-tests.sh": run_tests} if run_tests is not None else {},
        verifier_command=verifier.command,
        verifier_timeout_s=test_timeout or TEST_TIMEOUT_S,
        agent_timeout_s=agent_timeout or AGENT_TIMEOUT_S,
        results=results,
        warnings=(*setting.warnings, *_leak_warnings(folder, dockerfile, setting)),
    )
