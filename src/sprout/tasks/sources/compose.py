"""The docker-compose.yaml beside a task's Dockerfile, read for the two things that shape the
task's environment without a container engine: the build args of the service that builds
the task's image (Harbor's `main`, Terminal-Bench 1's `client`), and the other services,
which sprout does not start (a warning, not an error: many tasks never use them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from sprout.task import TaskError
from sprout.tasks.files import has_file, read_text

TASK_SERVICES = ("main", "client")
"""The service that is the task's own container: Harbor's name, then Terminal-Bench 1's."""


@dataclass(frozen=True)
class Compose:
    """What sprout takes from a docker-compose.yaml."""

    build_args: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def read_yaml(path: Path, task_id: str) -> object:
    """A task's YAML file; one that does not parse is a TaskError naming it."""
    text = read_text(path, task_id)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        detail = " ".join(str(error).split())
        raise TaskError(f"{task_id}: {path}: not valid YAML ({detail})") from None


def read_compose(path: Path, task_id: str) -> Compose:
    """`path`'s build args and warnings; a folder without one has neither."""
    if not has_file(path, task_id):
        return Compose()
    data = read_yaml(path, task_id)
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict):
        raise TaskError(f"{task_id}: {path}: services: expected a mapping of services")
    name = next((n for n in TASK_SERVICES if n in services), None)
    if name is None and len(services) == 1:
        name = next(iter(services))
    warnings: list[str] = []
    if len(services) > 1:
        warnings.append(
            f"{path}: services {', '.join(sorted(map(str, services)))}: sprout starts none of "
            "them; the agent and the tests get the task's own environment only"
        )
    service = services.get(name) if name is not None else None
    build = service.get("build") if isinstance(service, dict) else None
    args = build.get("args", {}) if isinstance(build, dict) else {}
    where = f"{task_id}: {path}: services.{name}.build.args"
    return Compose(_build_args(args, where, warnings), tuple(warnings))


def _build_args(args: object, where: str, warnings: list[str]) -> dict[str, str]:
    """Compose's `args`, a mapping or a list of `NAME=value`. A name without a value takes
    the host's environment in Compose; sprout leaves it out, so that a task builds the same
    on every machine, and says so."""
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        pairs = [a.partition("=") for a in args]
        args = {name: value if equals else None for name, equals, value in pairs}
    if not isinstance(args, dict):
        raise TaskError(f"{where}: expected a mapping or a list of NAME=value")
    found: dict[str, str] = {}
    for name, value in args.items():
        if value is None:
            warnings.append(f"{where}: {name} has no value (Compose takes the host's): left out")
        elif isinstance(value, str | int | float) and not isinstance(value, bool):
            found[str(name)] = str(value)
        else:
            raise TaskError(f"{where}: {name}: expected a string or a number, got {value!r}")
    return found
