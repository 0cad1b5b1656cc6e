"""Turning a task's Dockerfile into set-up steps, reading it as Docker reads it.

Docker's own parser (BuildKit's, through the `dockerfile` package) splits the
file into instructions, with continuation lines, heredocs, flags and the exec
form as `docker build` sees them; this module gives each instruction Docker's
meaning. FROM, ARG, ENV, RUN, WORKDIR, COPY, ADD, USER and SHELL build the
filesystem (`SetupStep`s over the image); every earlier stage of a multi-stage
build that the last one copies from becomes a `Stage` of its own. CMD,
ENTRYPOINT, EXPOSE, LABEL, HEALTHCHECK, STOPSIGNAL, VOLUME, ONBUILD and
MAINTAINER describe how a container starts, not what it holds: they are
recorded and otherwise ignored. Anything else is an error naming its line, so
a task never silently runs in an environment other than the one it describes.

This module reads the instructions in order; RUN is `dockerfile_run`'s, COPY and ADD
`dockerfile_copy`'s, and the state they all share `dockerfile_state`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dockerfile as buildkit  # type: ignore[import-not-found]

from sprout.task import SetupStep, Stage, TaskError
from sprout.tasks.dockerfile.copy import CopyInstructions
from sprout.tasks.dockerfile.run import RunInstructions
from sprout.tasks.dockerfile.state import (
    ARCH,
    DEFAULT_PATH,
    PROXY_ARGS,
    BaseEnv,
    DockerfilePlan,
    Recorded,
    StageState,
    absolute,
    flags,
    is_root,
)
from sprout.tasks.dockerfile.words import ExpansionError

__all__ = ["ARCH", "DEFAULT_PATH", "DockerfilePlan", "plan_dockerfile"]

BUILT = ("FROM", "ARG", "ENV", "RUN", "WORKDIR", "COPY", "ADD", "USER", "SHELL")
"""Instructions that make the filesystem: translated into steps."""
RECORDED = (
    "CMD",
    "ENTRYPOINT",
    "EXPOSE",
    "LABEL",
    "HEALTHCHECK",
    "STOPSIGNAL",
    "VOLUME",
    "ONBUILD",
    "MAINTAINER",
)
"""Instructions about how a container starts or is described: recorded, no step."""


def _escape_character(text: str) -> str:
    """The `# escape=` parser directive's character (backslash without one)."""
    for line in text.splitlines():
        directive = re.fullmatch(r"\s*#\s*([A-Za-z]+)\s*=\s*(\S*)\s*", line)
        if directive is None:
            break
        if directive.group(1).lower() == "escape" and directive.group(2) in ("\\", "`"):
            return directive.group(2)
    return "\\"


class _Reader(CopyInstructions, RunInstructions):
    """Reads one Dockerfile's instructions in order, stage by stage."""

    def read(self, command: Any) -> None:
        keyword = str(command.cmd).upper()
        here = f"{self.where}:{command.start_line}"
        if keyword not in BUILT and keyword not in RECORDED:
            raise TaskError(
                f"{here}: unsupported Dockerfile instruction {keyword} (sprout reads "
                f"{', '.join(BUILT)}, and records {', '.join(RECORDED)})"
            )
        try:
            if keyword == "FROM":
                self.from_(command, here)
            elif keyword == "ARG" and not self.stages:
                self.meta_arg(command, here)
            elif not self.stages:
                raise TaskError(f"{here}: {keyword} before the first FROM (only ARG may be)")
            elif keyword in RECORDED:
                arguments = (command.sub_cmd,) if command.sub_cmd else ()
                self.recorded.append(Recorded(here, keyword, (*arguments, *command.value)))
            else:
                getattr(self, keyword.lower())(self.stages[-1], command, here)
        except ExpansionError as error:
            raise TaskError(f"{here}: {keyword}: {error}") from None

    def from_(self, command: Any, here: str) -> None:
        for name, _value in flags(command, ("platform",), here):
            self.recorded.append(Recorded(here, "FROM", (f"--{name}",)))
        meta = {k: v for k, v in self.meta.items() if v is not None}
        words = [self.word(w, meta, here) for w in command.value]
        if len(words) == 3 and words[1].lower() == "as":
            alias = words[2].lower()
        elif len(words) == 1:
            alias = ""
        else:
            raise TaskError(f"{here}: FROM: expected IMAGE [AS NAME], got {' '.join(words)!r}")
        name = words[0]
        parent = next((s for s in reversed(self.stages) if s.name and s.name == name.lower()), None)
        if parent is not None:
            # A stage built on another continues it: same image, its steps first.
            stage = StageState(
                alias,
                parent.image,
                list(parent.steps),
                parent.workdir,
                dict(parent.env),
                user=parent.user,
                user_where=parent.user_where,
                shell=parent.shell,
                base=parent.base,
            )
        else:
            image = self.image_of(name)
            known = self.base_env(image)
            stage = StageState(alias, image, base=dict(known) if known is not None else None)
        self.stages.append(stage)
        self.sources.append(stage)

    def arg_value(self, name: str, default: str | None) -> str | None:
        """A declared ARG's value: the build arg given for it, else its default."""
        self.declared.add(name)
        if name in self.build_args:
            return self.build_args[name]
        return default

    def meta_arg(self, command: Any, here: str) -> None:
        for item in command.value:
            key, equals, default = str(item).partition("=")
            meta = {k: v for k, v in self.meta.items() if v is not None}
            value = self.word(default, meta, here) if equals else None
            self.meta[self.word(key, meta, here)] = self.arg_value(key, value)

    def arg(self, stage: StageState, command: Any, here: str) -> None:
        for item in command.value:
            key, equals, default = str(item).partition("=")
            key = self.word(key, stage.variables(), here)
            if equals:
                value = self.arg_value(key, self.word(default, stage.variables(), here))
            else:
                value = self.arg_value(key, self.meta.get(key))
            if value is not None:
                stage.args[key] = value

    def env(self, stage: StageState, command: Any, here: str) -> None:
        values = list(command.value)
        variables = stage.variables()  # every pair sees the values before this line
        for key, value in zip(values[0::2], values[1::2], strict=False):
            stage.env[self.word(key, variables, here)] = self.word(value, variables, here)

    def workdir(self, stage: StageState, command: Any, here: str) -> None:
        if not command.value:
            raise TaskError(f"{here}: WORKDIR needs a path")
        path = self.word(command.value[0], stage.variables(), here)
        stage.workdir = absolute(path, stage.workdir or "/")
        if not is_root(stage.user):  # BuildKit makes it as the USER; as root, RUN makes it
            stage.steps.append(
                SetupStep(kind="workdir", origin=here, destination=stage.workdir, user=stage.user)
            )

    def user(self, stage: StageState, command: Any, here: str) -> None:
        user = self.word(command.value[0], stage.variables(), here) if command.value else ""
        if not user:
            raise TaskError(f"{here}: USER needs a user")
        stage.user, stage.user_where = user, here

    def shell(self, stage: StageState, command: Any, here: str) -> None:
        if not command.json or not command.value:
            raise TaskError(f'{here}: SHELL needs the JSON form, e.g. ["/bin/bash", "-c"]')
        stage.shell = tuple(command.value)

    def plan(self) -> DockerfilePlan:
        if not self.stages:
            return DockerfilePlan(recorded=self.recorded, warnings=self.warnings)
        final = self.stages[-1]
        needed: set[int] = set()
        pending = [s.stage for s in final.steps if s.stage is not None]
        while pending:
            index = pending.pop()
            if index not in needed:
                needed.add(index)
                pending += [s.stage for s in self.sources[index].steps if s.stage is not None]
        renumber = {old: new for new, old in enumerate(sorted(needed))}

        def steps(stage: StageState) -> list[SetupStep]:
            return [
                s if s.stage is None else s.model_copy(update={"stage": renumber[s.stage]})
                for s in stage.steps
            ]

        stages = [
            Stage(
                name=self.sources[old].name,
                image=self.sources[old].image,
                steps=tuple(steps(self.sources[old])),
                workdir=self.sources[old].workdir or "/",
                env=self.sources[old].env,
            )
            for old in sorted(needed)
        ]
        unused = sorted(set(self.build_args) - self.declared - PROXY_ARGS)
        warnings = list(self.warnings)
        if unused:  # as Docker warns: the value is given, but nothing reads it
            warnings.append(
                f"{self.where}: build args {', '.join(unused)} were given but no ARG declares "
                "them, so they change nothing"
            )
        return DockerfilePlan(
            image=final.image,
            steps=steps(final),
            stages=stages,
            workdir=final.workdir,
            env=dict(final.env),
            user=final.user,
            user_origin=final.user_where,
            recorded=self.recorded,
            warnings=warnings,
        )


def plan_dockerfile(
    text: str,
    *,
    where: str,
    images: Mapping[str, str] | None = None,
    context: Path | None = None,
    build_args: Mapping[str, str] | None = None,
    base_env: BaseEnv | None = None,
    final_base: str | None = None,
) -> DockerfilePlan:
    """Translate a Dockerfile. `images` maps image names (with or without a tag) to folders;
    `context` is the build context COPY and ADD read from (checked when given: a source
    that names nothing is an error); `build_args` are `--build-arg`s over ARG defaults;
    `base_env` gives the ENV of the images the stages stand on, where it is known;
    `final_base` is the image the last stage runs on instead of its FROM's (`[sprout]
    image`), whose ENV its words then see."""
    if "\0" in text:  # BuildKit's parser would stop reading there, without a word
        line = text.count("\n", 0, text.index("\0")) + 1
        raise TaskError(f"{where}:{line}: a NUL byte; a Dockerfile is text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:  # a lone surrogate crashes the parser's process
        line = text.count("\n", 0, error.start) + 1
        raise TaskError(f"{where}:{line}: not valid Unicode (half a surrogate pair)") from None
    try:
        commands = list(buildkit.parse_string(text))
    except buildkit.GoParseError as error:
        raise TaskError(f"{where}: {error}") from None
    reader = _Reader(
        where,
        images or {},
        context,
        build_args or {},
        _escape_character(text),
        base_env or (lambda _image: None),
    )
    froms = [i for i, command in enumerate(commands) if str(command.cmd).upper() == "FROM"]
    for index, command in enumerate(commands):
        reader.read(command)
        if final_base is not None and froms and index == froms[-1]:
            known = reader.base_env(final_base)
            reader.stages[-1].base = dict(known) if known is not None else None
    return reader.plan()
