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
"""

from __future__ import annotations

import os
import platform
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dockerfile as buildkit  # type: ignore[import-not-found]

from sprout.task import SetupStep, Stage, TaskError
from sprout.tasks.buildcontext import (
    Ignore,
    clean_source,
    has_wildcards,
    matches,
    missing_hint,
    read_dockerignore,
    source_problem,
    special_file,
)
from sprout.tasks.dockerwords import ExpansionError, expand

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
DEFAULT_SHELL = ("/bin/sh", "-c")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The PATH every Debian and Ubuntu image's own ENV sets, for `ENV PATH=/x:$PATH`."""
ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}.get(
    platform.machine(), platform.machine()
)
"""This machine's architecture as Docker names it: the platform every stage is built for."""
PLATFORM_ARGS = {
    "TARGETPLATFORM": f"linux/{ARCH}",
    "TARGETOS": "linux",
    "TARGETARCH": ARCH,
    "TARGETVARIANT": "",
    "BUILDPLATFORM": f"linux/{ARCH}",
    "BUILDOS": "linux",
    "BUILDARCH": ARCH,
    "BUILDVARIANT": "",
}
"""The build args BuildKit defines itself (a stage still declares them with `ARG NAME`)."""
HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([^'\"\s]+)\2")
"""A heredoc marker as a word of its own: `<<EOF`, `<<-EOF`, `<<'EOF'`."""
CHMOD = re.compile(r"[0-7]{3,4}|[ugoa]*[-+=][rwxXst]*(,[ugoa]*[-+=][rwxXst]*)*")
COPY_FLAGS = {
    "COPY": ("from", "chown", "chmod", "link"),
    "ADD": ("chown", "chmod", "link", "checksum"),
}


@dataclass(frozen=True)
class Recorded:
    """An instruction that is kept for the record and changes nothing in the filesystem."""

    where: str
    instruction: str
    arguments: tuple[str, ...]


@dataclass
class DockerfilePlan:
    """What a Dockerfile amounts to: the last stage's image, steps, workdir, env and user,
    the earlier stages it copies from, and what was recorded or had to be guessed."""

    image: str = "host"
    """The last stage's `FROM` name, or the folder the --images table maps it to."""
    steps: list[SetupStep] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)
    """The earlier stages (and images) the steps copy from; `SetupStep.stage` indexes it."""
    workdir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    user: str = ""
    """The last `USER` ("" when none: root)."""
    recorded: list[Recorded] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(eq=False)
class _Stage:
    """A stage while it is read: what each instruction of it sees and changes."""

    name: str
    image: str
    steps: list[SetupStep] = field(default_factory=list)
    workdir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    args: dict[str, str] = field(default_factory=dict)
    """Build args declared in this stage that have a value: RUN sees them as variables."""
    user: str = ""
    user_where: str = ""
    """The line of the last USER, for the warning that the agent runs as root."""
    shell: tuple[str, ...] = DEFAULT_SHELL

    def variables(self) -> dict[str, str]:
        """What `$NAME` means in this stage's words (ENV wins over ARG, as in Docker)."""
        return {"PATH": DEFAULT_PATH, **self.args, **self.env}

    def step_env(self) -> dict[str, str]:
        return {**self.args, **self.env}


def _escape_character(text: str) -> str:
    """The `# escape=` parser directive's character (backslash without one)."""
    for line in text.splitlines():
        directive = re.fullmatch(r"\s*#\s*([A-Za-z]+)\s*=\s*(\S*)\s*", line)
        if directive is None:
            break
        if directive.group(1).lower() == "escape" and directive.group(2) in ("\\", "`"):
            return directive.group(2)
    return "\\"


def _absolute(path: str, base: str) -> str:
    """`path` made absolute against `base` and cleaned (`..` stops at the root)."""
    joined = path if path.startswith("/") else f"{base.rstrip('/')}/{path}"
    return "/" + clean_source(joined)


def _bare(name: str) -> str:
    """An image name without its tag or digest (the --images table may name it so)."""
    return name.split("@")[0].rsplit(":", 1)[0] if ":" in name.split("/")[-1] else name


def _chomp(text: str) -> str:
    """A `<<-` heredoc's body: leading tabs removed from every line."""
    return re.sub(r"(?m)^\t+", "", text)


def _script(text: str) -> str:
    """A shell command that runs `text` (which starts with `#!`) as an executable file, as
    BuildKit runs a heredoc with a shebang; the file is gone when it returns."""
    delimiter = "SPROUT_SCRIPT"
    while delimiter in text.splitlines():
        delimiter += "_"
    ending = "" if text.endswith("\n") else "\n"
    return (
        f"script=$(mktemp) && cat > \"$script\" <<'{delimiter}'\n{text}{ending}{delimiter}\n"
        'chmod +x "$script" && "$script"; status=$?; rm -f "$script"; exit $status'
    )


def _flags(command: Any, allowed: tuple[str, ...], here: str) -> Iterator[tuple[str, str]]:
    keyword = command.cmd.upper()
    for flag in command.flags:
        name, _, value = str(flag).removeprefix("--").partition("=")
        if name not in allowed:
            raise TaskError(
                f"{here}: {keyword} --{name} is not supported (sprout reads "
                f"{', '.join('--' + a for a in allowed) or 'no flags'} on {keyword})"
            )
        yield name, value


class _Reader:
    """Reads one Dockerfile's instructions in order, stage by stage."""

    def __init__(
        self,
        where: str,
        images: Mapping[str, str],
        context: Path | None,
        build_args: Mapping[str, str],
        escape: str,
    ) -> None:
        self.where = where
        self.images = images
        self.context = context
        self.build_args = build_args
        self.escape = escape
        self.ignore = read_dockerignore(context) if context is not None else ()
        self.meta: dict[str, str | None] = dict(PLATFORM_ARGS)
        """Build args declared before the first FROM (and BuildKit's own)."""
        self.stages: list[_Stage] = []
        """The Dockerfile's stages, in order; the last is the one being read."""
        self.sources: list[_Stage] = []
        """Everything `COPY --from` may name: the Dockerfile's stages and images."""
        self.recorded: list[Recorded] = []
        self.warnings: list[str] = []
        self.unset: set[str] = set()

    def word(
        self, text: str, variables: Mapping[str, str], here: str, *, quotes: bool = True
    ) -> str:
        """`text` as Docker reads a word; a variable it leaves empty is warned of once."""
        missing: set[str] = set()
        value = expand(text, variables, escape=self.escape, quotes=quotes, missing=missing)
        for name in sorted(missing - self.unset):
            self.unset.add(name)
            self.warnings.append(
                f'{here}: ${name} is set by no ARG or ENV before it, so it expands to "" '
                "(as in Docker; sprout cannot see the image's own ENV)"
            )
        return value

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
        for name, _value in _flags(command, ("platform",), here):
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
            stage = _Stage(
                alias,
                parent.image,
                list(parent.steps),
                parent.workdir,
                dict(parent.env),
                user=parent.user,
                user_where=parent.user_where,
                shell=parent.shell,
            )
        else:
            stage = _Stage(alias, self.images.get(name) or self.images.get(_bare(name)) or name)
        self.stages.append(stage)
        self.sources.append(stage)

    def arg_value(self, name: str, default: str | None) -> str | None:
        if name in self.build_args:
            return self.build_args[name]
        return default

    def meta_arg(self, command: Any, here: str) -> None:
        for item in command.value:
            key, equals, default = str(item).partition("=")
            meta = {k: v for k, v in self.meta.items() if v is not None}
            value = self.word(default, meta, here) if equals else None
            self.meta[self.word(key, meta, here)] = self.arg_value(key, value)

    def arg(self, stage: _Stage, command: Any, here: str) -> None:
        for item in command.value:
            key, equals, default = str(item).partition("=")
            key = self.word(key, stage.variables(), here)
            if equals:
                value = self.arg_value(key, self.word(default, stage.variables(), here))
            else:
                value = self.arg_value(key, self.meta.get(key))
            if value is not None:
                stage.args[key] = value

    def env(self, stage: _Stage, command: Any, here: str) -> None:
        values = list(command.value)
        variables = stage.variables()  # every pair sees the values before this line
        for key, value in zip(values[0::2], values[1::2], strict=False):
            stage.env[self.word(key, variables, here)] = self.word(value, variables, here)

    def workdir(self, stage: _Stage, command: Any, here: str) -> None:
        if not command.value:
            raise TaskError(f"{here}: WORKDIR needs a path")
        path = self.word(command.value[0], stage.variables(), here)
        stage.workdir = _absolute(path, stage.workdir or "/")

    def user(self, stage: _Stage, command: Any, here: str) -> None:
        user = self.word(command.value[0], stage.variables(), here) if command.value else ""
        if not user:
            raise TaskError(f"{here}: USER needs a user")
        stage.user, stage.user_where = user, here

    def shell(self, stage: _Stage, command: Any, here: str) -> None:
        if not command.json or not command.value:
            raise TaskError(f'{here}: SHELL needs the JSON form, e.g. ["/bin/bash", "-c"]')
        stage.shell = tuple(command.value)

    def run(self, stage: _Stage, command: Any, here: str) -> None:
        for name, value in _flags(command, ("mount", "network", "security"), here):
            if name == "mount":
                self.mount(value, here)
            else:
                self.warnings.append(
                    f"{here}: RUN --{name}={value} is ignored: set-up steps run with the "
                    "network and the sandbox's own isolation"
                )
        shell = stage.shell
        if command.heredocs:
            text, shell = self.run_heredoc(stage, command)
        elif command.json:
            text, shell = shlex.join(command.value), ()  # exec form: words, no shell
        else:
            text = command.value[0] if command.value else ""
        if not text.strip():
            raise TaskError(f"{here}: RUN needs a command")
        stage.steps.append(
            SetupStep(
                kind="run",
                origin=here,
                command=text,
                shell=shell,
                user=stage.user,
                workdir=stage.workdir or "/",
                env=stage.step_env(),
            )
        )

    def mount(self, value: str, here: str) -> None:
        options = dict(o.partition("=")[::2] for o in value.split(","))
        kind = options.get("type", "bind")
        if kind in ("cache", "tmpfs"):
            self.warnings.append(
                f"{here}: RUN --mount=type={kind} is ignored: the step writes into its "
                "target directory itself, and what it writes stays in the base layer"
            )
        elif kind in ("secret", "ssh"):
            self.warnings.append(
                f"{here}: RUN --mount=type={kind} is ignored: sprout gives set-up no build "
                "secrets or SSH agent"
            )
        else:
            raise TaskError(
                f"{here}: RUN --mount=type={kind} is not supported; COPY what the step "
                "needs in an instruction of its own"
            )

    def run_heredoc(self, stage: _Stage, command: Any) -> tuple[str, tuple[str, ...]]:
        """BuildKit's RUN with heredocs: a lone `<<EOF` runs its body (a file of its own when
        it starts with `#!`); otherwise the heredocs go back under the line, for the shell."""
        line = str(command.value[0]) if command.value else ""
        alone = HEREDOC.fullmatch(line.strip())
        if alone and len(command.heredocs) == 1:
            body = str(command.heredocs[0].content)
            body = _chomp(body) if alone.group(1) else body
            if body.startswith("#!"):
                return _script(body), DEFAULT_SHELL
            return body, stage.shell
        text = line + "".join(f"\n{h.content}{h.name}" for h in command.heredocs)
        return text, stage.shell

    def copy(self, stage: _Stage, command: Any, here: str) -> None:
        keyword = str(command.cmd).upper()
        variables = stage.variables()
        flags = {
            name: self.word(value, variables, here)
            for name, value in _flags(command, COPY_FLAGS[keyword], here)
        }
        chmod = flags.get("chmod", "")
        if chmod and not CHMOD.fullmatch(chmod):
            raise TaskError(f"{here}: {keyword} --chmod={chmod}: expected a mode such as 0755")
        words = [str(w) for w in command.value]
        if len(words) < 2:
            raise TaskError(f"{here}: {keyword} needs a source and a destination")
        *sources, named = words
        named = self.word(named, variables, here)
        into = named in ("", ".") or named.endswith(("/", "/."))
        destination = _absolute(named, stage.workdir or "/")
        if into and destination != "/":
            destination += "/"
        if len(sources) > 1 and not into:
            raise TaskError(
                f"{here}: {keyword} with more than one source needs a directory destination "
                f"ending in '/' (got {named!r})"
            )
        common: dict[str, Any] = {
            "origin": here,
            "destination": destination,
            "chown": flags.get("chown", ""),
            "chmod": chmod,
        }
        heredocs = iter(command.heredocs)
        for raw in sources:
            marker = HEREDOC.fullmatch(raw) if command.heredocs else None
            if marker is not None:
                document = next(heredocs)
                body = _chomp(document.content) if marker.group(1) else str(document.content)
                if not marker.group(2):  # an unquoted delimiter expands, as in a shell
                    body = self.word(body, variables, here, quotes=False)
                stage.steps.append(
                    SetupStep(kind="copy", source=str(document.name), content=body, **common)
                )
                continue
            source = self.word(raw, variables, here)
            if "from" in flags:
                index = self.source_index(flags["from"], here)
                path = "/" + clean_source(source)
                stage.steps.append(SetupStep(kind="copy", source=path, stage=index, **common))
            elif source.startswith(("http://", "https://", "git@", "git://")):
                stage.steps.append(self.download(keyword, source, flags, here, common))
            else:
                stage.steps.append(self.from_context(keyword, source, into, here, common))

    add = copy

    def download(
        self, keyword: str, source: str, flags: Mapping[str, str], here: str, common: Any
    ) -> SetupStep:
        if keyword == "COPY":
            raise TaskError(f"{here}: COPY {source}: COPY cannot read a URL (ADD can)")
        path = source.split("#", 1)[0].split("?", 1)[0]
        if source.startswith(("git@", "git://")) or path.endswith(".git"):
            raise TaskError(
                f"{here}: ADD {source}: adding a git repository is not supported; "
                "RUN git clone it instead"
            )
        checksum = flags.get("checksum", "")
        if checksum and not re.fullmatch(r"sha256:[0-9a-f]{64}", checksum):
            raise TaskError(f"{here}: ADD --checksum={checksum}: expected sha256:<64 hex digits>")
        return SetupStep(kind="copy", source=source, checksum=checksum, **common)

    def from_context(
        self, keyword: str, source: str, into: bool, here: str, common: Any
    ) -> SetupStep:
        cleaned = clean_source(source)
        if self.context is not None:
            found = matches(self.context, cleaned, Ignore(self.ignore))
            if not found and not has_wildcards(cleaned):
                left_out = cleaned and os.path.lexists(self.context / cleaned)
                why = " (.dockerignore leaves it out)" if left_out else ""
                why = why or missing_hint(source, cleaned, self.context)
                raise TaskError(f"{here}: {keyword} {source}: no such file in {self.context}{why}")
            if len(found) > 1 and not into:
                raise TaskError(
                    f"{here}: {keyword} {source} names {len(found)} files: the destination "
                    "must be a directory ending in '/'"
                )
            for path in found:
                problem = source_problem(self.context, path)
                if problem is None and (self.context / path).is_dir():
                    problem = special_file(self.context, path, Ignore(self.ignore))
                if problem is not None:
                    raise TaskError(f"{here}: {keyword} {source}: {problem}")
        return SetupStep(
            kind="copy",
            source=cleaned or ".",
            unpack=keyword == "ADD",
            ignore=self.ignore,
            **common,
        )

    def source_index(self, name: str, here: str) -> int:
        """Where `COPY --from=name` reads: an earlier stage (by name or number), else the
        image of that name (a stage with no steps of its own)."""
        earlier = self.stages[:-1]
        for stage in earlier:
            if stage.name and stage.name == name.lower():
                return self.index(stage)
        if name.isdigit():
            if int(name) >= len(earlier):
                raise TaskError(f"{here}: COPY --from={name}: no earlier stage {name}")
            return self.index(earlier[int(name)])
        if name.lower() == self.stages[-1].name:
            raise TaskError(f"{here}: COPY --from={name}: a stage cannot copy from itself")
        image = self.images.get(name) or self.images.get(_bare(name)) or name
        for index, source in enumerate(self.sources):
            if all(source is not s for s in self.stages) and source.image == image:
                return index
        self.sources.append(_Stage("", image))
        return len(self.sources) - 1

    def index(self, stage: _Stage) -> int:
        return next(i for i, s in enumerate(self.sources) if s is stage)

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

        def steps(stage: _Stage) -> list[SetupStep]:
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
        warnings = list(self.warnings)
        if not is_root(final.user):
            warnings.append(
                f"{final.user_where}: USER {final.user}: recorded, but the agent's commands run as "
                "root (set-up steps after USER do run as that user)"
            )
        return DockerfilePlan(
            image=final.image,
            steps=steps(final),
            stages=stages,
            workdir=final.workdir,
            env=dict(final.env),
            user=final.user,
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
) -> DockerfilePlan:
    """Translate a Dockerfile. `images` maps image names (with or without a tag) to folders;
    `context` is the build context COPY and ADD read from (checked when given: a source
    that names nothing is an error); `build_args` are `--build-arg`s over ARG defaults."""
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
    reader = _Reader(where, images or {}, context, build_args or {}, _escape_character(text))
    for command in commands:
        reader.read(command)
    return reader.plan()


def is_root(user: str) -> bool:
    """True when a `USER` value is root: `root`, `0`, `root:root`, `0:0` or none."""
    name, _, group = user.partition(":")
    return name in ("", "root", "0") and group in ("", "root", "0")
