"""Docker's word processing: quotes, escapes and `$VAR` expansion in a Dockerfile's words.

BuildKit expands build args and `ENV` in the words of FROM, COPY, ADD, ENV, ARG,
WORKDIR, USER and a few more (never in RUN, whose shell expands them itself),
with its own small shell grammar: `'...'` is literal, `"..."` expands, the
escape character (`\\`, or what an `# escape=` directive names) quotes one
character, and `$NAME`, `${NAME}`, `${NAME:-word}`, `${NAME-word}`,
`${NAME:+word}`, `${NAME+word}`, `${NAME:?message}`, `${NAME#glob}`,
`${NAME%glob}` (doubled for the longest match) and `${NAME/glob/text}` (`//`
for every match) take their values. An unset variable is empty, as in Docker;
the caller hears of it through `missing`, to say so.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

from sprout.errors import SproutError

NAME_START = re.compile(r"[A-Za-z_]")
NAME_CHAR = re.compile(r"[A-Za-z0-9_]")


class ExpansionError(SproutError, ValueError):
    """A word Docker would refuse: an unterminated quote, a bad `${...}`, a `${X:?message}`."""


def expand(
    word: str,
    variables: Mapping[str, str],
    *,
    escape: str = "\\",
    quotes: bool = True,
    missing: set[str] | None = None,
) -> str:
    """`word` with its quotes and escapes removed and its variables expanded, as BuildKit's
    ProcessWord does. `quotes=False` reads it as a heredoc's body: quotes stay, and only
    `$` and the escape character itself can be escaped. Names used without a value (and
    without a default) are added to `missing`."""
    lexer = _Lexer(word, variables, escape, quotes, missing if missing is not None else set())
    return lexer.until("")


class _Lexer:
    def __init__(
        self,
        text: str,
        variables: Mapping[str, str],
        escape: str,
        quotes: bool,
        missing: set[str],
    ) -> None:
        self.text = text
        self.position = 0
        self.variables = variables
        self.escape = escape
        self.quotes = quotes
        self.missing = missing

    def peek(self) -> str:
        return self.text[self.position] if self.position < len(self.text) else ""

    def take(self) -> str:
        character = self.peek()
        self.position += len(character)
        return character

    def fail(self, message: str) -> ExpansionError:
        return ExpansionError(f"{self.text!r}: {message}")

    def until(self, stop: str) -> str:
        """Characters up to `stop` (not taken; "" reads to the end)."""
        out: list[str] = []
        while True:
            character = self.peek()
            if not character:
                if stop:
                    raise self.fail(f"missing {stop!r}")
                return "".join(out)
            if stop and character == stop:
                return "".join(out)
            if character == "$":
                out.append(self.dollar())
                continue
            self.take()
            if self.quotes and character == "'":
                out.append(self.single_quoted())
            elif self.quotes and character == '"':
                out.append(self.double_quoted())
            elif character == self.escape:
                if self.quotes or self.peek() in ("$", self.escape):
                    out.append(self.take())  # at the very end: dropped, as BuildKit does
                else:
                    out.append(character)
            else:
                out.append(character)

    def single_quoted(self) -> str:
        end = self.text.find("'", self.position)
        if end < 0:
            raise self.fail("unterminated single quote")
        value = self.text[self.position : end]
        self.position = end + 1
        return value

    def double_quoted(self) -> str:
        out: list[str] = []
        while True:
            character = self.peek()
            if not character:
                raise self.fail("unterminated double quote")
            if character == '"':
                self.take()
                return "".join(out)
            if character == "$":
                out.append(self.dollar())
                continue
            self.take()
            if character == self.escape and self.peek() in ('"', "$", self.escape):
                character = self.take()
            out.append(character)

    def name(self) -> str:
        start = self.position
        while self.peek() and NAME_CHAR.match(self.peek()):
            self.take()
        return self.text[start : self.position]

    def value(self, name: str) -> str | None:
        return self.variables.get(name)

    def dollar(self) -> str:
        self.take()  # "$"
        character = self.peek()
        if character == "{":
            self.take()
            return self.braced()
        if character and NAME_START.match(character):
            name = self.name()
            found = self.value(name)
            if found is None:
                self.missing.add(name)
            return found or ""
        if character.isdigit():
            self.take()  # a positional parameter: nothing at build time
            return ""
        return "$"

    def braced(self) -> str:
        name = self.name()
        if not name:
            raise self.fail("bad substitution (expected a name after '${')")
        found = self.value(name)
        operator = self.take()
        if operator == "}":
            if found is None:
                self.missing.add(name)
            return found or ""
        if operator == ":":
            test = self.take()
            if test not in ("-", "+", "?"):
                raise self.fail(f"unsupported modifier ':{test}' in ${{{name}...}}")
            return self.conditional(name, test, found, bool(found))
        if operator in ("-", "+", "?"):
            return self.conditional(name, operator, found, found is not None)
        if operator in ("#", "%"):
            longest = self.peek() == operator
            if longest:
                self.take()
            pattern = self.word_to("}")
            return _strip(found or "", pattern, prefix=operator == "#", longest=longest)
        if operator == "/":
            every = self.peek() == "/"
            if every:
                self.take()
            pattern = self.until_either("/", "}")
            replacement = ""
            if self.take() == "/":
                replacement = self.word_to("}")
            return _replace(found or "", pattern, replacement, every)
        raise self.fail(f"unsupported modifier {operator!r} in ${{{name}...}}")

    def word_to(self, stop: str) -> str:
        word = self.until(stop)
        self.take()
        return word

    def until_either(self, first: str, second: str) -> str:
        """Raw pattern text up to `first` or `second` (not taken), expanding `$` in it."""
        out: list[str] = []
        while True:
            character = self.peek()
            if not character:
                raise self.fail(f"missing {second!r}")
            if character in (first, second):
                return "".join(out)
            if character == "$":
                out.append(self.dollar())
                continue
            out.append(self.take())

    def conditional(self, name: str, test: str, found: str | None, present: bool) -> str:
        word = self.word_to("}")
        if test == "-":
            return (found or "") if present else word
        if test == "+":
            return word if present else ""
        if not present:
            raise self.fail(f"{name}: {word or 'is not set'}")
        return found or ""


def _glob(pattern: str) -> re.Pattern[str]:
    """A shell pattern (`*`, `?`, `[...]`) as a regular expression for the whole text."""
    return re.compile(fnmatch.translate(pattern), re.DOTALL)


def _strip(value: str, pattern: str, *, prefix: bool, longest: bool) -> str:
    matcher = _glob(pattern)
    sizes = range(len(value), -1, -1) if longest else range(len(value) + 1)
    for size in sizes:
        part = value[:size] if prefix else value[len(value) - size :]
        if matcher.match(part):
            return value[size:] if prefix else value[: len(value) - size]
    return value


def _replace(value: str, pattern: str, replacement: str, every: bool) -> str:
    """`${NAME/glob/text}`: the longest match at the first place one starts (every one with
    `//`) replaced."""
    if not pattern:
        return value
    matcher = _glob(pattern)
    out: list[str] = []
    start = 0
    while start <= len(value):
        end = next(
            (e for e in range(len(value), start - 1, -1) if matcher.match(value[start:e])), None
        )
        if end is None or end == start:
            if start < len(value):
                out.append(value[start])
            start += 1
            continue
        out.append(replacement)
        start = end
        if not every:
            out.append(value[start:])
            return "".join(out)
    return "".join(out)
