"""The publisher's revisions of parsers the `swebench` package also names.

SWE-rebench V2's parser registry grew from the `swebench` package's, and for most shared names
sprout reads a log with the package's function. For the names here the publisher's function
reads some logs differently from the package's (5.0.2), even once the evaluation has taken the
timing suffixes out of both maps' names; a row's expected names come from the publisher's
reading, so these follow its rules, written here from them:
- `parse_log_pytest`, `parse_log_pytest_options`: pytest's `SKIPPED [1] file.py:40: reason`
  summary counts as a test named `[1]`, and `XFAIL` lines are not read (the package drops the
  first and reads the second as status XFAIL);
- `parse_log_pytest_v2`: a test's name is the one word after its status
  (`PASSED t.py::test_x[hello world]` names `t.py::test_x[hello`, `ERROR t.py::t - Boom` names
  `t.py::t`), a line ending in a status gives its first two words as name and status, and a
  status with no word beside it fails the log, as the publisher's parser crashes there (the
  package joins the words, cuts FAILED messages at ` - ` and skips the line);
- `parse_log_phpunit`: a testdox name loses its ` [1.34 ms]` before it is keyed, so a test seen
  twice with two durations is one test whose last status stands;
- `parse_log_maven`: a `BUILD SUCCESS|FAILURE` goes to the last `-Dtest=` read before it, or
  to `---NO TEST NAME FOUND YET---`; the package queues the commands and pairs them with the
  results in order. With the `set -x` trace on stderr, which comes after stdout, every result
  goes to that placeholder;
- `parse_log_gradle_custom`: `Class > test PASSED (1.2s)` counts, its duration dropped; a
  status alone on the line after its name does not (the package reads the opposite);
- `parse_log_react_pdf`: a file's duration is dropped only at the end of its `PASS`/`FAIL`
  line, so `PASS a.test.js (0.5 s) ● 1 snapshot written` is named all of that;
- `parse_log_jest`: a name keeps the whitespace around it (`✓ renders  (5 ms)` names
  `renders `), so after the timing is taken out, tests of the same title that differ only in
  that whitespace resolve by whichever variant was seen first last, not by the last line.
The publisher's other revisions of shared names (`parse_log_redis`, `parse_log_calypso`,
`parse_log_marked`, `parse_log_p5js`, `parse_log_vitest`) change only style, so the package's
read those. Nothing of the publisher's code is copied; its quirks are kept on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sprout.logparsers.common import FAILED, PASSED, SKIPPED, STATUSES, Parser, Statuses


def _lines(log: str) -> list[str]:
    """The log's lines, cut at `\\n` only, as the publisher's parsers cut them."""
    return log.split("\n")


# pytest's `-rA` summary: `PASSED t.py::test_x`, `FAILED t.py::test_y - AssertionError`.


def _summary_words(line: str) -> list[str] | None:
    """The words of a line that starts with a status, None for any other line; on a FAILED
    line each ` - ` (before the failure's message) is a plain gap, so the message is words."""
    if not line.startswith(STATUSES):
        return None
    if line.startswith(FAILED):
        line = line.replace(" - ", " ")
    return line.split()


def _read_pytest_summary(log: str, name: Callable[[str], str]) -> Statuses:
    """Each status line's second word (through `name`) with its first word as the status;
    a status word alone on its line is passed over."""
    statuses: Statuses = {}
    for line in _lines(log):
        words = _summary_words(line)
        if words is not None and len(words) > 1:
            statuses[name(words[1])] = words[0]
    return statuses


def _as_is(test: str) -> str:
    """The test's name as the summary prints it."""
    return test


def _short_option(test: str) -> str:
    """`test_x[/abs/path/data.txt]` as `test_x[/data.txt]`: a parameter that is an absolute
    path (not `//host`, not a glob) keeps its last part only, as paths differ by machine.
    The name is cut after its last `]`."""
    opening, closing = test.find("["), test.rfind("]")
    if opening < 0 or closing < opening:
        return test
    option = test[opening + 1 : closing]
    if option.startswith("/") and not option.startswith("//") and "*" not in option:
        option = "/" + option.rsplit("/", 1)[-1]
    return f"{test[:opening]}[{option}]"


def parse_log_pytest(log: str) -> Statuses:
    """pytest's `-rA` summary lines, the skip summary's `[N]` included, XFAIL not read."""
    return _read_pytest_summary(log, _as_is)


def parse_log_pytest_options(log: str) -> Statuses:
    """As `parse_log_pytest`, with absolute-path parameters cut to their last part."""
    return _read_pytest_summary(log, _short_option)


_COLOUR_NUMBER = re.compile(r"\[\d+m")
_CONTROL_CHARACTERS = str.maketrans("", "", "".join(map(chr, range(1, 32))))


def _without_codes(line: str) -> str:
    """The line less single-number colour codes (`[32m`) and every control character (the
    escape, tabs and carriage returns alike); `[1;31m` keeps its brackets."""
    return _COLOUR_NUMBER.sub("", line).translate(_CONTROL_CHARACTERS)


def _two_words(words: list[str], line: str) -> tuple[str, str]:
    """The first two words; a line with fewer fails the whole log, as it does the
    publisher's parser, whose evaluation then gives no verdict either."""
    if len(words) < 2:
        raise ValueError(f"a status with no test beside it: {line!r}")
    return words[0], words[1]


def _verbose_verdict(line: str) -> tuple[str, str] | None:
    """(test, status) of a summary line (`PASSED t.py::t`) or of an older pytest's verbose
    line (`t.py::t PASSED`), one word each; None for any other line."""
    words = _summary_words(line)
    if words is not None:
        status, test = _two_words(words, line)
        return test, status
    if line.endswith(STATUSES):
        return _two_words(line.split(), line)
    return None


def parse_log_pytest_v2(log: str) -> Statuses:
    """pytest's summary and verbose lines, colour codes and control characters taken out."""
    return _verbose_statuses(log, _without_codes)


_FAILED_PROGRESS = re.compile(r"FAILED\s*\[.*?\]")


def parse_log_pytest_pydantic(log: str) -> Statuses:
    """As `parse_log_pytest_v2`, a verbose line's `FAILED [ 12%]` read as `FAILED`: SWE-Gym's
    reading of pydantic's logs, whose verbose lines carry the progress after the status."""
    return _verbose_statuses(log, lambda line: _FAILED_PROGRESS.sub(FAILED, _without_codes(line)))


def _verbose_statuses(log: str, clean: Callable[[str], str]) -> Statuses:
    statuses: Statuses = {}
    for line in _lines(log):
        verdict = _verbose_verdict(clean(line))
        if verdict is not None:
            test, status = verdict
            statuses[test] = status
    return statuses


# PHPUnit's `--testdox`: a `Suite (Fully\Qualified\Class)` line, then `✔ test [1.34 ms]` lines.

_TESTDOX_SUITE = re.compile(r"(\w.+) \(.+\)")
_TESTDOX_TEST = re.compile(r"\s*([✔✘↩])\s*(.*)")
_TESTDOX_STATUS = {"✔": PASSED, "✘": FAILED, "↩": SKIPPED}
_BRACKETED_DURATION = re.compile(r"\s*\[\s*\d+(?:\.\d+)?\s*m?s\s*\]\s*$", re.IGNORECASE)


def parse_log_phpunit(log: str) -> Statuses:
    """Each testdox test as `Suite > test`, its bracketed duration taken off before it is
    keyed; a test before any suite line is under `None`, as the publisher's names it."""
    statuses: Statuses = {}
    suite: str | None = None
    for line in _lines(log):
        if heading := _TESTDOX_SUITE.fullmatch(line):
            suite = heading.group(1)
        elif test := _TESTDOX_TEST.fullmatch(line):
            name = _BRACKETED_DURATION.sub("", test.group(2)).strip()
            statuses[f"{suite} > {name}"] = _TESTDOX_STATUS[test.group(1)]
    return statuses


# Maven, one `mvn test -Dtest=<test>` per test, its command traced by `set -x`.

_NO_TEST_YET = "---NO TEST NAME FOUND YET---"
_LAST_DTEST = re.compile(r".*-Dtest=(\S+)")
_BUILD_RESULTS = {"BUILD SUCCESS": PASSED, "BUILD FAILURE": FAILED}


def parse_log_maven(log: str) -> Statuses:
    """Each build's result for the test of the last `-Dtest=` read before it (the line's own
    included; its last `-Dtest=` if several), or for a placeholder before any."""
    statuses: Statuses = {}
    test = _NO_TEST_YET
    for line in map(str.strip, _lines(log)):
        if command := _LAST_DTEST.match(line):
            test = command.group(1)
        for ending, status in _BUILD_RESULTS.items():
            if line.endswith(ending):
                statuses[test] = status
    return statuses


# Gradle with a test logger that prints `com.example.FooTest > testAdd PASSED (0.5s)`.

_GRADLE_RESULT = re.compile(
    r"(?!>)(?P<test>.{2,}?)\s+(?P<status>PASSED|FAILED)(?:\s+\(\d+(?:\.\d+)?s\))?"
)
_GRADLE_STATUS = {"PASSED": PASSED, "FAILED": FAILED}


def parse_log_gradle_custom(log: str) -> Statuses:
    """Lines that end in a status, and maybe a `(1.2s)` after it; the name is all before the
    first status that ends the line that way, at least two characters, not led by `>`
    (Gradle's `> Task :test` lines)."""
    statuses: Statuses = {}
    for line in map(str.strip, _lines(log)):
        if result := _GRADLE_RESULT.fullmatch(line):
            statuses[result["test"]] = _GRADLE_STATUS[result["status"]]
    return statuses


# Jest's per-file lines (`PASS src/a.test.js (5.2 s)`) and its `--verbose` test lines.

_FILE_VERDICT = re.compile(r"(?P<verdict>PASS|FAIL)\s(?P<file>.*)")
_FILE_DURATION = re.compile(r"\s\([\d.]+\s*m?s\)$")
_FILE_STATUS = {"PASS": PASSED, "FAIL": FAILED}


def parse_log_react_pdf(log: str) -> Statuses:
    """Each test file by its `PASS`/`FAIL` line, read raw; a duration is taken off only where
    it ends the line."""
    statuses: Statuses = {}
    for line in _lines(log):
        if verdict := _FILE_VERDICT.match(line):
            name = _FILE_DURATION.sub("", verdict["file"]).rstrip()
            statuses[name] = _FILE_STATUS[verdict["verdict"]]
    return statuses


_TEST_VERDICT = re.compile(r"(?P<mark>[✓✕○])\s(?P<rest>.+)")
_TEST_DURATION = re.compile(r"\s\(\d+\s*m?s\)$")
_TEST_STATUS = {"✓": PASSED, "✕": FAILED, "○": SKIPPED}


def parse_log_jest(log: str) -> Statuses:
    """Each verbose test line by its title, whitespace kept; a whole-number duration that
    ends the line is taken off, unless nothing would be left of the title."""
    statuses: Statuses = {}
    for line in map(str.strip, _lines(log)):
        if verdict := _TEST_VERDICT.match(line):
            title = verdict["rest"]
            duration = _TEST_DURATION.search(title)
            if duration is not None and duration.start() > 0:
                title = title[: duration.start()]
            statuses[title] = _TEST_STATUS[verdict["mark"]]
    return statuses


PARSERS: dict[str, Parser] = {
    "parse_log_pytest": parse_log_pytest,
    "parse_log_pytest_options": parse_log_pytest_options,
    "parse_log_pytest_v2": parse_log_pytest_v2,
    "parse_log_pytest_pydantic": parse_log_pytest_pydantic,
    "parse_log_phpunit": parse_log_phpunit,
    "parse_log_maven": parse_log_maven,
    "parse_log_gradle_custom": parse_log_gradle_custom,
    "parse_log_react_pdf": parse_log_react_pdf,
    "parse_log_jest": parse_log_jest,
}
