"""What reading a Dockerfile keeps as it goes: the plan it ends with, each stage's state, and
the small rules every instruction shares (paths, image names, flags, `$NAME` words).

`sprout.tasks.dockerfile.parse` reads the instructions; RUN and COPY/ADD, the two that make
set-up steps, are `dockerfile_run`'s and `dockerfile_copy`'s. They all work on one
`ReaderState`, defined here so that none of them imports another.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sprout.task import SetupStep, Stage, TaskError
from sprout.tasks.dockerfile.context import clean_source, read_dockerignore
from sprout.tasks.dockerfile.words import expand

DEFAULT_SHELL = ("/bin/sh", "-c")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The PATH BuildKit gives a stage whose image sets none (and every Debian image sets)."""
BaseEnv = Callable[[str], "Mapping[str, str] | None"]
"""The ENV of the image a `FROM` names, None while it is not known (not in the image
cache yet): a stage's `$NAME` words see it, as `docker build` reads them over the image."""
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
PROXY_ARGS = frozenset(
    name
    for base in ("HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "NO_PROXY", "ALL_PROXY")
    for name in (base, base.lower())
)
"""Build args Docker predefines: given with no ARG for them, they are not warned of."""
HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([^'\"\s]+)\2")
"""A heredoc marker as a word of its own: `<<EOF`, `<<-EOF`, `<<'EOF'`."""


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
    """The last `USER` ("" when none: root): the agent's commands run as it."""
    user_origin: str = ""
    """The Dockerfile line of that USER, for the error when the image has no such user."""
    recorded: list[Recorded] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(eq=False)
class StageState:
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
    """The line of the last USER, for the error when the image has no such user."""
    shell: tuple[str, ...] = DEFAULT_SHELL
    base: dict[str, str] | None = None
    """The ENV of the image under the stage, None while it is not known."""

    def variables(self) -> dict[str, str]:
        """What `$NAME` means in this stage's words: the image's ENV, then ARG, then ENV
        (ENV wins over ARG, as in Docker); an image whose ENV has no PATH gets BuildKit's."""
        return {"PATH": DEFAULT_PATH, **(self.base or {}), **self.args, **self.env}

    def step_env(self) -> dict[str, str]:
        """The environment a RUN step of this stage runs with."""
        return {**self.args, **self.env}


def absolute(path: str, base: str) -> str:
    """`path` made absolute against `base` and cleaned (`..` stops at the root)."""
    joined = path if path.startswith("/") else f"{base.rstrip('/')}/{path}"
    return "/" + clean_source(joined)


def bare(name: str) -> str:
    """An image name without its tag or digest (the --images table may name it so)."""
    return name.split("@")[0].rsplit(":", 1)[0] if ":" in name.split("/")[-1] else name


def chomp(text: str) -> str:
    """A `<<-` heredoc's body: leading tabs removed from every line."""
    return re.sub(r"(?m)^\t+", "", text)


def flags(command: Any, allowed: tuple[str, ...], here: str) -> Iterator[tuple[str, str]]:
    """The `--name=value` flags of an instruction; one it does not take is a TaskError."""
    keyword = command.cmd.upper()
    for flag in command.flags:
        name, _, value = str(flag).removeprefix("--").partition("=")
        if name not in allowed:
            raise TaskError(
                f"{here}: {keyword} --{name} is not supported (sprout reads "
                f"{', '.join('--' + a for a in allowed) or 'no flags'} on {keyword})"
            )
        yield name, value


def is_root(user: str) -> bool:
    """True when a `USER` value is root: `root`, `0`, `root:root`, `0:0` or none."""
    name, _, group = user.partition(":")
    return name in ("", "root", "0") and group in ("", "root", "0")


class ReaderState:
    """One Dockerfile's reading so far: its stages, what `COPY --from` may name, the build
    args, and what was recorded or warned of."""

    def __init__(
        self,
        where: str,
        images: Mapping[str, str],
        context: Path | None,
        build_args: Mapping[str, str],
        escape: str,
        base_env: BaseEnv,
    ) -> None:
        self.where = where
        self.images = images
        self.base_env = base_env
        self.context = context
        self.build_args = build_args
        self.declared: set[str] = set()
        """Build args some ARG declares: one given that none declares is warned of."""
        self.escape = escape
        self.ignore = read_dockerignore(context) if context is not None else ()
        self.meta: dict[str, str | None] = dict(PLATFORM_ARGS)
        """Build args declared before the first FROM (and BuildKit's own)."""
        self.stages: list[StageState] = []
        """The Dockerfile's stages, in order; the last is the one being read."""
        self.sources: list[StageState] = []
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
        stage = self.stages[-1] if self.stages else None
        for name in sorted(missing - self.unset):
            self.unset.add(name)
            if stage is None:
                why = "before the first FROM"
            elif stage.base is None:
                why = f"and {stage.image}'s own ENV is not known until it is in the image cache"
            else:
                why = f"nor by {stage.image}'s own ENV"
            self.warnings.append(
                f'{here}: ${name} is set by no ARG or ENV before it, so it expands to "" ({why})'
            )
        return value

    def image_of(self, name: str) -> str:
        """The image (or folder) a FROM or `COPY --from` name stands for."""
        return self.images.get(name) or self.images.get(bare(name)) or name
