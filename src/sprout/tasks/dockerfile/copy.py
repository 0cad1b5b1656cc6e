"""A Dockerfile's COPY and ADD as `docker build` reads them: sources from the build context
(checked against it and its .dockerignore), from an earlier stage or an image
(`--from`), heredocs, and URLs (ADD); `--chown`, `--chmod`, `--checksum`."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from sprout.task import SetupStep, TaskError
from sprout.tasks.dockerfile.context import (
    Ignore,
    clean_source,
    has_wildcards,
    matches,
    missing_hint,
    source_problem,
    special_file,
)
from sprout.tasks.dockerfile.state import (
    HEREDOC,
    ReaderState,
    StageState,
    absolute,
    chomp,
    flags,
)

CHMOD = re.compile(r"[0-7]{3,4}|[ugoa]*[-+=][rwxXst]*(,[ugoa]*[-+=][rwxXst]*)*")
COPY_FLAGS = {
    "COPY": ("from", "chown", "chmod", "link"),
    "ADD": ("chown", "chmod", "link", "checksum"),
}


class CopyInstructions(ReaderState):
    """COPY and ADD: one `copy` step per source."""

    def copy(self, stage: StageState, command: Any, here: str) -> None:
        keyword = str(command.cmd).upper()
        variables = stage.variables()
        given = {
            name: self.word(value, variables, here)
            for name, value in flags(command, COPY_FLAGS[keyword], here)
        }
        chmod = given.get("chmod", "")
        if chmod and not CHMOD.fullmatch(chmod):
            raise TaskError(f"{here}: {keyword} --chmod={chmod}: expected a mode such as 0755")
        words = [str(w) for w in command.value]
        if len(words) < 2:
            raise TaskError(f"{here}: {keyword} needs a source and a destination")
        *sources, named = words
        named = self.word(named, variables, here)
        into = named in ("", ".") or named.endswith(("/", "/."))
        destination = absolute(named, stage.workdir or "/")
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
            "chown": given.get("chown", ""),
            "chmod": chmod,
        }
        heredocs = iter(command.heredocs)
        for raw in sources:
            marker = HEREDOC.fullmatch(raw) if command.heredocs else None
            if marker is not None:
                document = next(heredocs)
                body = chomp(document.content) if marker.group(1) else str(document.content)
                if not marker.group(2):  # an unquoted delimiter expands, as in a shell
                    body = self.word(body, variables, here, quotes=False)
                stage.steps.append(
                    SetupStep(kind="copy", source=str(document.name), content=body, **common)
                )
                continue
            source = self.word(raw, variables, here)
            if "from" in given:
                index = self.source_index(given["from"], here)
                path = "/" + clean_source(source)
                stage.steps.append(SetupStep(kind="copy", source=path, stage=index, **common))
            elif source.startswith(("http://", "https://", "git@", "git://")):
                stage.steps.append(self.download(keyword, source, given, here, common))
            else:
                stage.steps.append(self.from_context(keyword, source, into, here, common))

    add = copy

    def download(
        self, keyword: str, source: str, given: Mapping[str, str], here: str, common: Any
    ) -> SetupStep:
        """ADD of a URL: fetched by the step, checked against `--checksum` when given."""
        if keyword == "COPY":
            raise TaskError(f"{here}: COPY {source}: COPY cannot read a URL (ADD can)")
        path = source.split("#", 1)[0].split("?", 1)[0]
        if source.startswith(("git@", "git://")) or path.endswith(".git"):
            raise TaskError(
                f"{here}: ADD {source}: adding a git repository is not supported; "
                "RUN git clone it instead"
            )
        checksum = given.get("checksum", "")
        if checksum and not re.fullmatch(r"sha256:[0-9a-f]{64}", checksum):
            raise TaskError(f"{here}: ADD --checksum={checksum}: expected sha256:<64 hex digits>")
        return SetupStep(kind="copy", source=source, checksum=checksum, **common)

    def from_context(
        self, keyword: str, source: str, into: bool, here: str, common: Any
    ) -> SetupStep:
        """A source in the build context, checked now (when there is a context) so that a
        missing or unreadable one names its line before anything is built."""
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
        image = self.image_of(name)
        for index, source in enumerate(self.sources):
            if all(source is not s for s in self.stages) and source.image == image:
                return index
        self.sources.append(StageState("", image))
        return len(self.sources) - 1

    def index(self, stage: StageState) -> int:
        """Where `stage` is among the sources `COPY --from` indexes."""
        return next(i for i, s in enumerate(self.sources) if s is stage)
