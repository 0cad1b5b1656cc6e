"""The Test Anything Protocol (TAP 12, 13 and 14) as perl's Test::More, `prove -v` and
`node --test --test-reporter=tap` write it."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field, replace

from sprout.verify.parsers import ANSI, decode
from sprout.verify.types import Outcome, ResultsError, TestResult

_VERSION = re.compile(r"^TAP version \d+$", re.IGNORECASE)
_PLAN = re.compile(r"^1\.\.(\d+)(?:\s*#.*)?$")
_POINT = re.compile(r"^(not ok|ok)\b(?: +(\d+))?(?: *- *| +|$)(.*)$")
_BAIL = re.compile(r"^Bail out!\s*(.*)$")
_PROVE_FILE = re.compile(r"^(\S+\.\w+) \.{2,} ?$")  # "t/calc.t .. " before its TAP
_DIRECTIVE = re.compile(r"^(skip\w*|todo)\b\s*(.*)$", re.IGNORECASE)
_HASH = re.compile(r"(?<!\\)#")


@dataclass
class _Level:
    """The test points at one indentation (TAP 14 indents subtests by four spaces)."""

    plan: int | None = None
    numbers: list[int] = field(default_factory=list)
    results: list[TestResult] = field(default_factory=list)
    last: int | None = None
    """Index in results of the latest point's own result: YAML and comments attach to it."""


@dataclass
class _Stream:
    """One TAP document; `prove -v` over several files prints one per file."""

    prefix: str = ""
    levels: dict[int, _Level] = field(default_factory=dict)
    bail: str | None = None

    def finish(self) -> list[TestResult]:
        out: list[TestResult] = []
        for depth in sorted(self.levels):  # deeper levels left here lost their parent's line
            out.extend(_finish(self.levels[depth], self.prefix, self.bail))
        return out


def has_tap(log: str) -> bool:
    """Whether the log holds TAP: a version line, or a plan line and a test point."""
    lines = [line.strip() for line in ANSI.sub("", decode(log)).splitlines()]
    if any(_VERSION.match(line) for line in lines):
        return True
    return any(_PLAN.match(line) for line in lines) and any(_POINT.match(line) for line in lines)


def parse_tap(text: str, *, source: str = "TAP output") -> list[TestResult]:
    """Read every TAP document in a log.

    "ok" is a pass and "not ok" a failure; "# SKIP" makes either a skip; "# TODO" makes a
    failure a skip (an expected failure) and leaves a pass a pass. A YAML block (---/...)
    or "#" comment lines after a failing point become its message. A subtest's points are
    named "parent::child" and stand for the parent, which is kept only when it failed on its
    own. Tests that the plan (1..N) promised but that never ran are errors, as is a run that
    printed tests but no plan (it stopped early). Under `prove -v`, names start "file.t::".
    """
    lines = ANSI.sub("", decode(text)).splitlines()
    if not any(_VERSION.match(line.strip()) or _PLAN.match(line.strip()) for line in lines):
        raise ResultsError(
            f"{source}: no TAP found: neither a 'TAP version' nor a '1..N' plan line"
        )
    return _Reader(lines).read()


@dataclass
class _Reader:
    """`parse_tap` as it reads a log line by line: the documents read so far, the one being
    read, and where the YAML block or "#" comment lines after a point belong."""

    lines: list[str]
    results: list[TestResult] = field(default_factory=list)
    """The tests of the documents already finished."""
    stream: _Stream = field(default_factory=_Stream)
    i: int = 0
    """The next line to read."""
    last_depth: int | None = None
    """The depth of the point just read, for its YAML block."""
    attach: int | None = None
    """The depth whose latest point takes "#" comment lines."""
    comments: list[str] = field(default_factory=list)

    def read(self) -> list[TestResult]:
        """Every document's tests, in the order they were printed."""
        while self.i < len(self.lines):
            raw = self.lines[self.i].rstrip()
            self.i += 1
            line = raw.lstrip(" ")
            if line == "---" and self.last_depth is not None:
                self._yaml_block(self.last_depth)
                continue
            self.last_depth = None
            if (
                line.startswith("#")
                and self.attach is not None
                and not line.startswith("# Subtest")
            ):
                self.comments.append(line[1:])
                continue
            self._attach_comments()
            if not line.startswith("#"):
                self._structure(raw, line, (len(raw) - len(line)) // 4)
        self._attach_comments()
        self._next_document()
        return self.results

    def _yaml_block(self, depth: int) -> None:
        """The YAML block (--- to ...) after the point just read at `depth`: its message."""
        block = []
        while self.i < len(self.lines) and self.lines[self.i].strip() != "...":
            block.append(self.lines[self.i])
            self.i += 1
        self.i += 1
        message = _yaml_message(textwrap.dedent("\n".join(block)))
        _attach(self.stream.levels[depth], message)
        self.last_depth = None

    def _attach_comments(self) -> None:
        """The "#" lines gathered after a failing point become part of its message."""
        if self.comments and self.attach is not None:
            message = textwrap.dedent("\n".join(self.comments)).strip()
            _attach(self.stream.levels[self.attach], message)
        self.comments, self.attach = [], None

    def _structure(self, raw: str, line: str, depth: int) -> None:
        """One line that is not a comment: a prove file header, a version, a plan, a bail
        out or a test point, any of which may end one document and start the next."""
        if header := _PROVE_FILE.match(raw):
            self._next_document(prefix=f"{header[1]}::")
        elif depth == 0 and _VERSION.match(line):
            if (
                self.stream.levels
            ):  # a version line starts a document; prove's header may precede it
                self._next_document()
        elif plan := _PLAN.match(line):
            level = self.stream.levels.setdefault(depth, _Level())
            if depth == 0 and level.plan is not None:
                self._next_document()  # a second document right after the first
                level = self.stream.levels.setdefault(0, _Level())
            level.plan = int(plan[1])
        elif bail := _BAIL.match(line):
            self.stream.bail = f"Bail out! {bail[1]}".strip()
            self._next_document()
        elif point := _POINT.match(line):
            top = self.stream.levels.get(0)
            if depth == 0 and point[2] == "1" and top and top.plan is not None and top.numbers:
                self._next_document()  # a document that put its plan last ended
            outcome = _point(self.stream, depth, point)
            self.last_depth = depth
            self.attach = depth if outcome != "passed" else None

    def _next_document(self, prefix: str = "") -> None:
        """Finish the document being read and start the next (`prefix`: prove's file)."""
        self.results.extend(self.stream.finish())
        self.stream = _Stream(prefix=prefix)


def _point(stream: _Stream, depth: int, point: re.Match[str]) -> Outcome:
    """Record one test point, folding in the subtests printed above it."""
    level = stream.levels.setdefault(depth, _Level())
    number = int(point[2]) if point[2] else len(level.numbers) + 1
    level.numbers.append(number)
    text = point[3]
    split = _HASH.search(text)
    description, directive = (text[: split.start()], text[split.end() :]) if split else (text, "")
    name = description.strip().replace("\\#", "#").replace("\\\\", "\\") or f"test {number}"
    outcome: Outcome = "passed" if point[1] == "ok" else "failed"
    message = ""
    if found := _DIRECTIVE.match(directive.strip()):
        reason = found[2].strip()
        if found[1].lower().startswith("skip"):
            outcome, message = "skipped", reason
        elif outcome == "failed":
            outcome, message = "skipped", f"todo: {reason}".rstrip(": ")
    children = [stream.levels.pop(d) for d in sorted(stream.levels) if d > depth]
    kids = [kid for child in children for kid in _finish(child, f"{name}::", None)]
    level.results.extend(kids)
    level.last = None
    own_failure = outcome == "failed" and not any(k.outcome in ("failed", "error") for k in kids)
    if not kids or own_failure:
        level.results.append(TestResult(name, outcome, message))
        level.last = len(level.results) - 1
    return outcome


def _yaml_message(block: str) -> str:
    """A YAML diagnostics block as a message: its message or error first, as plain text, then
    the other keys as written, less timings."""
    groups: list[list[str]] = []
    for line in block.splitlines():
        if groups and (line.startswith((" ", "- ")) or not line.strip()):
            groups[-1].append(line)
        else:
            groups.append([line])
    first: list[str] = []
    rest: list[str] = []
    for group in groups:
        key, _, value = group[0].partition(":")
        if key == "duration_ms":
            continue
        if key not in ("message", "error") or first:
            rest.extend(group)
            continue
        value = value.strip()
        if value in ("|", "|-", "|+", ">", ">-", ">+"):
            value = ""
        elif len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        body = textwrap.dedent("\n".join(group[1:])).strip("\n")
        first.append("\n".join(text for text in (value, body) if text))
    return "\n".join(first + rest).strip()


def _attach(level: _Level, text: str) -> None:
    if level.last is None or not text:
        return
    result = level.results[level.last]
    if result.outcome != "passed":
        message = f"{result.message}\n{text}" if result.message else text
        level.results[level.last] = replace(result, message=message)


def _finish(level: _Level, prefix: str, bail: str | None) -> list[TestResult]:
    out = [replace(result, name=prefix + result.name) for result in level.results]
    if level.plan is None:
        if level.numbers:
            reason = bail or "no plan line ('1..N') after the tests: the run stopped early"
            out.append(TestResult(f"{prefix}<plan>", "error", reason))
        return out
    missing = sorted(set(range(1, level.plan + 1)) - set(level.numbers))
    why = f"planned (1..{level.plan}) but never reported" + (f"; {bail}" if bail else "")
    out.extend(TestResult(f"{prefix}test {n}", "error", why) for n in missing)
    if len(level.numbers) > level.plan:
        extra = f"planned {level.plan} tests but {len(level.numbers)} reported"
        out.append(TestResult(f"{prefix}<plan>", "error", extra))
    return out
