"""An R2E-Gym row's fix: `parsed_commit_content`, the commit as structured file diffs, read
and written back as the git patch that is the oracle's one turn.

R2E-Gym publishes the fix not as patch text but as its parse of `git diff` between the
commit's parent and the commit: for each file its header (path, mode lines), index line,
`---`/`+++` lines and hunks (the two ranges, the section heading, and each line with its
kind). Its validation applies the patch written from them for the commit's Python files,
tests and code alike, so the oracle's patch holds exactly those. Written here from the
published structure; the parent commit (`old_commit_hash`) is the one the image's
repository is checked out at.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class _Model(BaseModel):
    """The published JSON keeps fields sprout does not need (file contents, entities)."""

    model_config = ConfigDict(extra="ignore")


class _Path(_Model):
    path: str


class _Header(_Model):
    file: _Path
    misc_line: str | None = None
    """`new file mode ...`, `deleted file mode ...`, `old mode`/`new mode`: one or more lines."""


class _IndexLine(_Model):
    old_commit_hash: str
    new_commit_hash: str
    mode: str = ""


class _Range(_Model):
    start: int
    length: int | None = None

    def text(self) -> str:
        return str(self.start) if self.length is None else f"{self.start},{self.length}"


class _Descriptor(_Model):
    old_range: _Range
    new_range: _Range
    section: str = ""


class _Line(_Model):
    content: str
    type: Literal["context", "added", "deleted", "note"]


class _LineGroup(_Model):
    all_lines: list[_Line] = Field(default_factory=list)


class _Hunk(_Model):
    descriptor: _Descriptor
    line_group: _LineGroup


class FileDiff(_Model):
    """One file of the commit, as R2E-Gym parsed it."""

    header: _Header
    index_line: _IndexLine | None = None
    is_binary_file: bool = False
    binary_line: str | None = None
    minus_file: _Path | None = None
    plus_file: _Path | None = None
    hunks: list[_Hunk] = Field(default_factory=list)

    @property
    def path(self) -> str:
        return self.header.file.path

    def patch(self) -> str:
        """The file's part of the patch: headers, then each hunk's lines."""
        lines = [f"diff --git a/{self.path} b/{self.path}"]
        if self.header.misc_line:
            lines.append(self.header.misc_line)
        if self.index_line is not None:
            index = self.index_line
            mode = f" {index.mode}" if index.mode else ""
            lines.append(f"index {index.old_commit_hash}..{index.new_commit_hash}{mode}")
        if self.is_binary_file and self.binary_line:
            lines.append(self.binary_line)
        if self.minus_file is not None and self.plus_file is not None:
            lines += [f"--- {self.minus_file.path}", f"+++ {self.plus_file.path}"]
        for hunk in self.hunks:
            head = hunk.descriptor
            section = f" {head.section}" if head.section else ""
            lines.append(f"@@ -{head.old_range.text()} +{head.new_range.text()} @@{section}")
            lines += [_PREFIX[line.type] + line.content for line in hunk.line_group.all_lines]
        return "".join(line + "\n" for line in lines)


_PREFIX = {"context": " ", "added": "+", "deleted": "-", "note": "\\ "}
"""How a hunk's line of each kind is written (a note: `\\ No newline at end of file`)."""


class ParsedCommit(_Model):
    """The fix: its file diffs and the two commits they lie between."""

    file_diffs: list[FileDiff]
    old_commit_hash: str = Field(min_length=1)
    new_commit_hash: str = Field(min_length=1)

    def gold_patch(self) -> str:
        """The patch R2E-Gym's validation applies: every Python file of the commit."""
        return "".join(diff.patch() for diff in self.file_diffs if diff.path.endswith(".py"))


def read_parsed_commit(value: object) -> ParsedCommit:
    """`parsed_commit_content` (a JSON string, as published; or the object itself) read;
    ValueError says what is wrong, naming the part of the structure at fault."""
    data: Any = value
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object of the commit, got {type(data).__name__}")
    try:
        return ParsedCommit.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"{where}: {first['msg']}") from None
