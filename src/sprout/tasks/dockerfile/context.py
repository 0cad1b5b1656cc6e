"""The build context: which files a Dockerfile's COPY and ADD read, picked as Docker picks them.

A source is relative to the context's root (`..` never climbs above it, a
leading `/` is the root), may hold wildcards (`*`, `?`, `[a-z]`, matched one
path component at a time, dot-files included), and a directory stands for
everything under it. `.dockerignore` leaves paths out: one pattern a line,
`**` for any number of components, `!` to take a path back, the last pattern
that matches deciding; a pattern that matches a directory matches all under it.

A source that is a link is followed, but only within the context: one that
leads out of it (`COPY hostname /x` with `hostname -> /etc/hostname`) is
refused, as Docker refuses to read outside its context; links inside a copied
directory are copied as links, never followed. Named pipes, sockets and
devices are refused: a build copies files, directories and links.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sprout.tasks.files import kind, optional_text

WILDCARDS = re.compile(r"(?<!\\)[*?\[]")


def clean_source(source: str) -> str:
    """`source` relative to the context's root, as BuildKit joins it onto "/" ("" is the
    root itself)."""
    parts: list[str] = []
    for part in source.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/".join(parts)


def has_wildcards(path: str) -> bool:
    """True when `path` is a pattern rather than a name."""
    return WILDCARDS.search(path) is not None


def _component(pattern: str, *, double_star: bool) -> str:
    """A Go `filepath.Match` pattern (plus `**` where allowed) as a regular expression."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        character = pattern[index]
        if character == "*":
            if double_star and pattern.startswith("**", index):
                index += 2
                if pattern.startswith("/", index):
                    out.append("(?:.*/)?")
                    index += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif character == "?":
            out.append("[^/]")
        elif character == "[":
            end = pattern.find("]", index + 2)
            if end < 0:
                out.append(re.escape(character))
            else:
                body = pattern[index + 1 : end]
                negate = body.startswith(("^", "!"))
                body = body[1:] if negate else body
                escaped = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
                out.append(f"[{'^' if negate else ''}{escaped}]")
                index = end
        elif character == "\\" and index + 1 < len(pattern):
            index += 1
            out.append(re.escape(pattern[index]))
        else:
            out.append(re.escape(character))
        index += 1
    return "".join(out)


def read_dockerignore(context: Path) -> tuple[str, ...]:
    """The patterns of `context/.dockerignore`, cleaned as Docker cleans them (comments and
    blank lines dropped, a leading `/` and `./` removed); () when there is none."""
    text = optional_text(context / ".dockerignore", None)  # TaskError: a folder, not UTF-8
    if text is None:
        return ()
    patterns: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        body = clean_source(line[1:].strip() if negate else line)
        if body:
            patterns.append(f"!{body}" if negate else body)
    return tuple(patterns)


class Ignore:
    """Decides which context paths `.dockerignore` patterns leave out."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.rules = [
            (p.startswith("!"), re.compile(_component(p.lstrip("!"), double_star=True)))
            for p in patterns
        ]
        self.takes_back = any(negate for negate, _ in self.rules)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __call__(self, relative: str) -> bool:
        """True when `relative` (a path under the context's root) is left out."""
        if not self.rules or not relative:
            return False
        parts = relative.split("/")
        prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        excluded = False
        for negate, rule in self.rules:
            if any(rule.fullmatch(prefix) for prefix in prefixes):
                excluded = not negate
        return excluded


def matches(root: Path, source: str, ignore: Ignore | None = None) -> list[str]:
    """The paths under `root` (relative, sorted) that cleaned `source` names: itself, or
    every match of its wildcards; those `ignore` leaves out are not among them."""
    ignore = ignore or Ignore(())
    if not has_wildcards(source):
        exists = os.path.lexists(root / source) if source else True
        return [source] if exists and not ignore(source) else []
    found = [""]
    for component in source.split("/"):
        if not has_wildcards(component):
            name = re.sub(r"\\(.)", r"\1", component)
            found = [f"{f}/{name}" if f else name for f in found]
            found = [f for f in found if os.path.lexists(root / f)]
            continue
        pattern = re.compile(_component(component, double_star=False))
        following: list[str] = []
        for parent in found:
            directory = root / parent
            if not directory.is_dir() or directory.is_symlink():
                continue
            following += [
                f"{parent}/{name}" if parent else name
                for name in sorted(os.listdir(directory))
                if pattern.fullmatch(name)
            ]
        found = following
    return sorted(f for f in found if not ignore(f))


@dataclass(frozen=True)
class MatchedSource:
    """One COPY source as the build context answers it, read once before set-up runs: the
    base layer's name hashes what it found, and the copy step places it."""

    context: Path
    """The build context's root."""
    source: str
    """The source cleaned (`clean_source`)."""
    ignore: Ignore
    """The step's `.dockerignore` patterns."""
    found: tuple[str, ...]
    """The paths it names (`matches`), relative to the context's root."""


def match_source(context: Path, source: str, patterns: Sequence[str]) -> MatchedSource:
    """What COPY source `source` names in `context`, `patterns` left out; OSError when a
    folder on the way cannot be read."""
    ignore = Ignore(patterns)
    cleaned = clean_source(source)
    return MatchedSource(context, cleaned, ignore, tuple(matches(context, cleaned, ignore)))


def inside(root: Path, relative: str) -> Path | None:
    """`root/relative` with links followed, or None when they lead out of `root` (or
    nowhere: round in a loop)."""
    base = root.resolve()
    try:
        path = Path(os.path.realpath(root / relative)) if relative else base
    except OSError:
        return None
    return path if path == base or base in path.parents else None


def source_problem(root: Path, relative: str) -> str | None:
    """Why `root/relative`, a path `matches` found, cannot be copied: a link that leads out
    of the context, to nothing or round in a loop, or something that is neither a file nor
    a directory; None when it can be."""
    named = root / relative
    try:
        path = Path(os.path.realpath(named, strict=True))
    except FileNotFoundError:
        return f"{relative} is a link to {os.readlink(named)}, which does not exist"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return f"{relative} is a link that leads round in a loop"
        return f"{relative} cannot be read ({error.strerror})"
    if inside(root, relative) is None:
        return f"{relative} links out of the build context (to {path})"
    mode = os.stat(path).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return f"{relative} is {kind(mode)}; a build copies files, directories and links"
    return None


def special_file(root: Path, relative: str, ignore: Ignore | None = None) -> str | None:
    """The first path under directory `root/relative` that is neither a file, a directory
    nor a link (a pipe, a socket, a device), in words; None when there is none."""
    for below in walk(root, relative, ignore):
        mode = os.lstat(root / below).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            return f"{below} is {kind(mode)}; a build copies files, directories and links"
    return None


def missing_hint(source: str, cleaned: str, context: Path) -> str:
    """What a source that names nothing was read as, when that is not what it says: Docker
    reads `/etc/hostname` and `../x` inside the context, never outside it."""
    parts = source.split("/")
    if source.startswith("/") or ".." in parts:
        return (
            f" (sources are read inside the build context, as Docker reads them: {source} "
            f"is {context / cleaned if cleaned else context})"
        )
    return ""


def walk(root: Path, relative: str, ignore: Ignore | None = None) -> Iterator[str]:
    """Every path under directory `root/relative` (relative to `root`, parents first, sorted),
    without those `ignore` leaves out; links are listed, not followed."""
    ignore = ignore or Ignore(())
    top = root / relative
    for directory, dirnames, filenames in os.walk(top):
        dirnames.sort()
        here = os.path.relpath(directory, root)
        here = "" if here == "." else here
        for name in sorted([*dirnames, *filenames]):
            path = f"{here}/{name}" if here else name
            if not ignore(path):
                yield path
        if ignore and not ignore.takes_back:
            dirnames[:] = [d for d in dirnames if not ignore(f"{here}/{d}" if here else d)]
