"""Turning a task's Dockerfile into set-up steps over an image sprout can mount.

Only the instructions that describe a filesystem are supported (FROM, RUN,
WORKDIR, COPY, ENV, ARG); anything else is an error naming it, so a task never
silently runs in an environment other than the one it describes.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from sprout.task import SetupStep, TaskError

SUPPORTED = ("FROM", "RUN", "WORKDIR", "COPY", "ENV", "ARG")


@dataclass
class DockerfilePlan:
    """What a Dockerfile amounts to: the image, the set-up steps, the final workdir and env."""

    image: str = "host"
    """The `FROM` name, or the folder the --images table maps it to."""
    steps: list[SetupStep] = field(default_factory=list)
    workdir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _instructions(text: str) -> list[tuple[int, str, str]]:
    """(line number, INSTRUCTION, arguments), with continuation lines joined."""
    found: list[tuple[int, str, str]] = []
    pending = ""
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = (pending + stripped).strip()
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        found.append((start, keyword.upper(), arguments.strip()))
    return found


def _words(arguments: str) -> list[str]:
    """Exec form (a JSON array) or shell words."""
    if arguments.startswith("["):
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
    return shlex.split(arguments)


def _substitute(text: str, variables: Mapping[str, str]) -> str:
    return re.sub(
        r"\$\{(\w+)\}|\$(\w+)",
        lambda m: variables.get(m.group(1) or m.group(2), m.group(0)),
        text,
    )


def plan_dockerfile(
    text: str,
    *,
    where: str,
    images: Mapping[str, str] | None = None,
    context: Path | None = None,
) -> DockerfilePlan:
    """Translate a Dockerfile; `images` maps image names (with or without a tag) to folders,
    `context` is the build context that COPY reads from."""
    images = images or {}
    plan = DockerfilePlan()
    workdir = "/"
    args: dict[str, str] = {}
    for number, keyword, arguments in _instructions(text):
        here = f"{where}:{number}"
        if keyword not in SUPPORTED:
            raise TaskError(
                f"{here}: unsupported Dockerfile instruction {keyword} "
                f"(sprout reads {', '.join(SUPPORTED)})"
            )
        variables = {**args, **plan.env}
        if keyword == "FROM":
            name = _substitute(_words(arguments)[0], variables)
            bare = name.split("@")[0].rsplit(":", 1)[0] if ":" in name.split("/")[-1] else name
            plan.image = images.get(name) or images.get(bare) or name
        elif keyword == "RUN":
            command = (
                " ".join(shlex.quote(w) for w in _words(arguments))
                if arguments.startswith("[")
                else arguments
            )
            plan.steps.append(
                SetupStep(kind="run", command=command, workdir=workdir, env=dict(variables))
            )
        elif keyword == "WORKDIR":
            workdir = str(PurePosixPath(workdir, _substitute(arguments, variables)))
            plan.workdir = workdir
        elif keyword == "COPY":
            words = [w for w in _words(arguments) if not w.startswith("--")]
            if len(words) < 2:
                raise TaskError(f"{here}: COPY needs a source and a destination")
            named = _substitute(words[-1], variables)
            destination = str(PurePosixPath(workdir, named))
            into = len(words) > 2 or named.endswith("/") or named in (".", "./")
            for source in words[:-1]:
                # Docker copies a directory's contents, and a file into a destination
                # that names a directory.
                is_file = context is not None and (context / source).is_file()
                target = destination
                if into and is_file:
                    target = str(PurePosixPath(destination, PurePosixPath(source).name))
                plan.steps.append(SetupStep(kind="copy", source=source, destination=target))
        elif keyword == "ENV":
            plan.env.update(_pairs(arguments, here, variables))
        elif keyword == "ARG":
            name, _, default = arguments.partition("=")
            args[name.strip()] = default.strip().strip('"')
    return plan


def _pairs(arguments: str, where: str, variables: Mapping[str, str]) -> dict[str, str]:
    words = shlex.split(arguments)
    if words and "=" not in words[0]:
        return {words[0]: _substitute(" ".join(words[1:]), variables)}
    pairs = {}
    for word in words:
        key, equals, value = word.partition("=")
        if not equals:
            raise TaskError(f"{where}: ENV {word!r}: expected KEY=VALUE")
        pairs[key] = _substitute(value, variables)
    return pairs
