"""Parsers for the test runners of compiled languages, by SWE-rebench V2's parser names.

Each reads the whole log (stdout, then stderr) line by line:
- C/C++: pytest's verbose lines for libraries tested from Python (`parse_log_cpp`, ujson's
  bindings), a hand-written harness's `Test name   passed` lines (`_v2`), `[3/9] name... OK`
  runners and Botan's `AES-128 ran 17 tests in 3.2 msec all ok` summaries (`_v3`), and CTest's
  `1/9 Test  #1: name .....   Passed  0.01 sec` lines (`_v4`);
- Swift: XCTest's `Test Case 'Suite.testName' passed (0.001 seconds)`, as `swift test` prints
  it on Linux;
- C#: `dotnet test`'s `  Passed Ns.Class.Method [4 ms]` lines and xUnit.net's `[FAIL]` lines;
- Dart: `dart test --reporter json` events (`parse_log_dart`), and the expanded reporter's
  `00:01 +3: /abs/path_test.dart: name` lines, behind a workspace tool's `[package]: ` (`_v2`)
  or bare, `[E]` marking a failure (`_v3`).
A test's name is the one the dataset's expected lists use, so which lines count, how a name is
cut and which status wins follow the dataset publisher's parsers exactly, quirks included.
Colours are not taken out, as the publisher's parsers do not: a coloured verdict is no verdict.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from sprout.logparsers.common import ERROR, FAILED, PASSED, SKIPPED, Parser, Statuses


def _stripped_lines(log: str) -> Iterator[str]:
    """The log's non-blank lines, without their surrounding blanks."""
    return (line for raw in log.splitlines() if (line := raw.strip()))


def _record(results: Statuses, name: str, status: str) -> None:
    """A pass never replaces a status the test already has; any other verdict is the latest."""
    if status == PASSED:
        results.setdefault(name, status)
    else:
        results[name] = status


# --- C/C++ -------------------------------------------------------------------------------

_PYTEST_VERDICTS = {
    status: re.compile(rf"\s+{status}") for status in (PASSED, FAILED, SKIPPED, ERROR)
}
_PYTEST_FAILURES = " FAILURES ".center(80, "=")
_PYTEST_RULE = "_" * 27


def parse_log_cpp(log: str) -> Statuses:
    """pytest's verbose output, for C/C++ libraries tested through Python bindings (ujson).

    A test is named by the last `::` part of its node id (its file is not part of the name);
    a line naming several verdicts takes the first of PASSED, FAILED, SKIPPED, ERROR it names.
    From pytest's FAILURES banner on, only failure headings count, each a FAILED under its full
    title, and only those with 27 underscores a side: pytest centres just 24-character titles so.
    """
    results: Statuses = {}
    lines = _stripped_lines(log)
    for line in lines:
        if line.startswith(_PYTEST_FAILURES):
            break
        if verdict := _pytest_verdict(line):
            node, status = verdict
            _record(results, node.split("::")[-1], status)
    for line in lines:
        if (title := _pytest_failure_title(line)) is not None:
            results[title] = FAILED
    return results


def _pytest_verdict(line: str) -> tuple[str, str] | None:
    """What precedes the verdict's blanks (the node id, whatever follows it), and the verdict."""
    for status, verdict in _PYTEST_VERDICTS.items():
        if found := verdict.search(line):
            return line[: found.start()], status
    return None


def _pytest_failure_title(line: str) -> str | None:
    """The title between two 27-underscore rules, or None when the line is not so framed."""
    left, right = _PYTEST_RULE + " ", " " + _PYTEST_RULE
    if len(line) < len(left + right) or not line.startswith(left) or not line.endswith(right):
        return None
    return line[len(left) : len(line) - len(right)]


_HARNESS_RESULT = re.compile(r"Test(?P<name>\s.*\s)(?P<verdict>passed|failed|skipped)")


def parse_log_cpp_v2(log: str) -> Statuses:
    """A hand-written C/C++ harness's `Test <name>   passed|failed|skipped` lines.

    The name is all between `Test` and the lower-case verdict ending the line, blanks aside; a
    rerun's pass does not hide the failure printed before it.
    """
    results: Statuses = {}
    for line in _stripped_lines(log):
        if found := _HARNESS_RESULT.fullmatch(line):
            _record(results, found["name"].strip(), found["verdict"].upper())
    return results


_BOTAN_SUMMARY = re.compile(r"\s+ran\s+(?P<count>\d+)\s+tests\s+in\s+[\d.]+\s+m?sec\s+", re.I)
_BOTAN_FAILED = re.compile(r"\bfailed\b", re.I)
_ELLIPSIS_VERDICT = re.compile(r"\.\.\.\s*(?P<word>\w+)$")
_PROGRESS = re.compile(r"\[[0-9]+/[0-9]+\]")
_VERDICT_WORDS = (
    (SKIPPED, re.compile(r"\bskipped\b", re.I)),
    (FAILED, re.compile(r"\b(?:fail|failed|failure)\b", re.I)),
    (PASSED, re.compile(r"\b(?:ok|passed)\b", re.I)),
)


def parse_log_cpp_v3(log: str) -> Statuses:
    """`[12/414] name... OK` runners (penguinV's), Botan's group summaries, any verdict word.

    A `... WORD` line names its test by what precedes the ellipsis, less the `[i/n]` counter;
    the verdict is the first of skipped, failed, passed whose word is in the line (or in WORD
    upper-cased), else ERROR. A Botan `G ran N tests in T msec <outcome>` line is the test
    `G ran N tests <outcome>` (the timing out, as the dataset's names have none), FAILED when
    the outcome says failed. Any other line naming a verdict word is a test named by the
    whole line: the publisher's catch-all, which turns summaries such as `All tests passed` in.
    """
    results: Statuses = {}
    for line in _stripped_lines(log):
        if summary := _BOTAN_SUMMARY.search(line):
            outcome = line[summary.end() :]
            name = f"{line[: summary.start()]} ran {summary['count']} tests {outcome}"
            results[name] = FAILED if _BOTAN_FAILED.search(outcome) else PASSED
        elif ended := _ELLIPSIS_VERDICT.search(line):
            name = line[: ended.start()]
            if counter := _PROGRESS.match(name):
                name = name[counter.end() :]
            results[name.strip()] = _verdict_word(ended["word"].upper(), line) or ERROR
        elif status := _verdict_word(line):
            results[line] = status
    return results


def _verdict_word(*texts: str) -> str | None:
    """The first of SKIPPED, FAILED, PASSED whose word is in one of `texts`."""
    for status, word in _VERDICT_WORDS:
        if any(word.search(text) for text in texts):
            return status
    return None


_CTEST_RESULT = re.compile(
    r"""\s* \d+/\d+ \s+ test \s+ \#\d+: \s+  # ` 3/10 Test  #3: `
        (?P<name>.+?) \s+ \.+ \s+            # the name and its dotted leader
        (?P<verdict>passed|failed|skipped|timeout)\b""",
    re.IGNORECASE | re.VERBOSE,
)
_CTEST_STATUSES = {"PASSED": PASSED, "FAILED": FAILED, "TIMEOUT": FAILED}


def parse_log_cpp_v4(log: str) -> Statuses:
    """CTest's per-test summary lines, `3/10 Test  #3: name ......   Passed    0.01 sec`.

    The name is CTest's test name; the verdict must stand after blanks, so CTest's own
    `...***Failed` / `***Skipped` / `***Timeout` lines name no test (only passes are read).
    """
    results: Statuses = {}
    for line in log.splitlines():
        if found := _CTEST_RESULT.match(line):
            verdict = found["verdict"].upper()
            results[found["name"].strip()] = _CTEST_STATUSES.get(verdict, SKIPPED)
    return results


# --- Swift, C# -----------------------------------------------------------------------------

_XCTEST_RESULT = re.compile(
    r"Test Case '(?P<name>[^']+)'\s+(?P<verdict>passed|failed)\s+\([0-9.]+\s+seconds\)"
)


def parse_log_swift(log: str) -> Statuses:
    """XCTest's `Test Case 'Suite.testName' passed (0.001 seconds)` lines (`swift test`, Linux).

    The name is the quoted `Suite.testName`; skipped cases and macOS's `-[Suite testName]`
    lines (ending in a full stop) are not read.
    """
    results: Statuses = {}
    for line in _stripped_lines(log):
        if found := _XCTEST_RESULT.fullmatch(line):
            results[found["name"]] = found["verdict"].upper()
    return results


_TOOK = r"\s+\[.+\]"  # ` [4 ms]`; the name ends at the first blank-and-bracket that can be it
_DOTNET_RULES = (
    (re.compile(r"\[xUnit\.net\s+[\d:.]+\]\s+(?P<name>.+?)\s+\[FAIL\]"), FAILED),
    (re.compile(rf"\s+Failed\s+(?P<name>.+?){_TOOK}"), FAILED),
    (re.compile(rf"\s+Skipped\s+(?P<name>.+?)(?:{_TOOK})?"), SKIPPED),
    (re.compile(rf"\s+Passed\s+(?P<name>.+?){_TOOK}"), PASSED),
)


def parse_log_csharp(log: str) -> Statuses:
    """`dotnet test`'s indented `Passed|Failed|Skipped Ns.Class.Method [4 ms]` lines, and
    xUnit.net's `[xUnit.net 00:00:00.52]     Ns.Class.Method [FAIL]` lines.

    The name is the display name up to its duration; a theory's arguments holding ` [` (an
    array) cut it there. A pass does not hide the same test's failure printed before it.
    """
    results: Statuses = {}
    for raw in log.splitlines():
        line = raw.rstrip()
        for rule, status in _DOTNET_RULES:
            if found := rule.fullmatch(line):
                _record(results, found["name"], status)
                break
    return results


# --- Dart ----------------------------------------------------------------------------------

_DART_RESULTS = {"success": PASSED, "failure": FAILED, "error": ERROR}


def parse_log_dart(log: str) -> Statuses:
    """`dart test --reporter json`: a `testStart` names a test's id, its `testDone` its result.

    The name is the test's full name (its groups' names first). The runner's `loading <file>`
    tests and hidden ones (`setUpAll`, `tearDownAll`) are left out. A skipped test's done event
    says `"result": "success"` with `"skipped": true`, and so counts PASSED; `skipped` decides
    only for an event with no known result.
    """
    names: dict[Any, str] = {}
    results: Statuses = {}
    for event in _dart_events(log):
        if event.get("type") == "testStart":
            _dart_started(event.get("test"), names)
        elif event.get("type") == "testDone":
            _dart_done(event, names, results)
    return results


def _dart_events(log: str) -> Iterator[dict[str, Any]]:
    """Each line's JSON object, or each object of a line's JSON array; other lines are noise."""
    for line in _stripped_lines(log):
        try:
            decoded = json.loads(line)
        except ValueError:
            continue
        for event in decoded if isinstance(decoded, list) else [decoded]:
            if isinstance(event, dict):
                yield event


def _dart_started(test: Any, names: dict[Any, str]) -> None:
    """Note a test's name under its id, unless it is the loading of a suite."""
    if not isinstance(test, dict):
        return
    test_id, name = test.get("id"), test.get("name")
    if _dart_id(test_id) and isinstance(name, str) and name and not name.startswith("loading "):
        names[test_id] = name


def _dart_done(event: dict[str, Any], names: dict[Any, str], results: Statuses) -> None:
    """Record a visible, named test's result."""
    test_id = event.get("testID")
    if not _dart_id(test_id) or event.get("hidden", False) or test_id not in names:
        return
    result = event.get("result")
    status = _DART_RESULTS.get(result) if isinstance(result, str) else None
    if status is None and event.get("skipped", False):
        status = SKIPPED
    if status is not None:
        results[names[test_id]] = status


def _dart_id(value: Any) -> bool:
    """Whether a JSON value can be a test's id (a scalar; null is none)."""
    return isinstance(value, int | float | str)


_WORKSPACE_TEST_LINE = re.compile(
    r"\[\w+\]:\s+\d{2}:\d{2}\s+\+\d+:\s+(?P<file>/[^:]+\.dart):\s+(?P<name>.+)"
)


def parse_log_dart_v2(log: str) -> Statuses:
    """The expanded reporter's lines behind a workspace tool's package tag,
    `[pkg]: 00:01 +3: /abs/path_test.dart: group test`.

    A test is `<file>: <name>`. Only lines with no failure or skip counter are read, and none
    saying `loading` anywhere (a test named so included): a test printed twice (started, then
    done) PASSED, once ERROR.
    """
    seen: Counter[str] = Counter()
    for line in _stripped_lines(log):
        if "loading" not in line.lower() and (found := _WORKSPACE_TEST_LINE.fullmatch(line)):
            seen[f"{found['file']}: {found['name']}"] += 1
    return {name: PASSED if times > 1 else ERROR for name, times in seen.items()}


_SUITE_LOAD_ERROR = re.compile(
    r"\d+:\d+\s+\+\d+\s+-\d+:\s+loading\s+(?P<file>/[^:]+\.dart)\s+\[E\]"
)
_EXPANDED_TEST_LINE = re.compile(
    r"\d+:\d+\s+\+\d+(?:\s+-\d+)?:\s+(?P<file>/[^:]+\.dart):\s+(?P<name>.+?)(?:\s+\[E\])?"
)


def parse_log_dart_v3(log: str) -> Statuses:
    """The expanded reporter's `00:01 +3 -1: /abs/path_test.dart: group test [E]` lines.

    A test is `<file>: <name>`; `[E]` anywhere on its line makes it FAILED, else it PASSED
    (a failure counter alone does not fail it). A suite that fails to load is ERROR under its
    file's path. Lines with a skip counter (`~1`) are not read.
    """
    results: Statuses = {}
    for line in _stripped_lines(log):
        if found := _SUITE_LOAD_ERROR.fullmatch(line):
            results[found["file"]] = ERROR
        elif found := _EXPANDED_TEST_LINE.fullmatch(line):
            name = f"{found['file']}: {found['name'].strip()}"
            _record(results, name, FAILED if "[E]" in line else PASSED)
    return results


PARSERS: dict[str, Parser] = {
    "parse_log_cpp": parse_log_cpp,
    "parse_log_cpp_v2": parse_log_cpp_v2,
    "parse_log_cpp_v3": parse_log_cpp_v3,
    "parse_log_cpp_v4": parse_log_cpp_v4,
    "parse_log_swift": parse_log_swift,
    "parse_log_csharp": parse_log_csharp,
    "parse_log_dart": parse_log_dart,
    "parse_log_dart_v2": parse_log_dart_v2,
    "parse_log_dart_v3": parse_log_dart_v3,
}
