"""Readers for what test runners leave behind: JUnit XML, CTRF JSON, pytest's summary, reward files.

Each parser turns one file (or the verifier's log) into TestResults and raises ResultsError,
naming `source` and the field, when the input is not what the format promises. TAP lives in
tap.py. Scoring is results.py's job.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field

from sprout.verify.types import Outcome, ResultsError, TestResult

FIRST_LINES = 10
"""How many lines of a failure's body (traceback, stack) go into its message."""


def decode(data: str | bytes) -> str:
    """Text from a file's bytes: UTF-8 (BOM allowed), undecodable bytes replaced, CRLF as LF."""
    text = data if isinstance(data, str) else data.decode("utf-8-sig", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def first_lines(text: str, count: int = FIRST_LINES) -> str:
    lines = text.strip("\n").splitlines()
    return "\n".join(lines[:count]) + ("\n[...]" if len(lines) > count else "")


def _message(head: str, body: str) -> str:
    """A failure's message: its summary line, then the start of its body unless that repeats it."""
    head, body = head.strip(), first_lines(body).rstrip()
    if not body or body.strip() == head:
        return head
    if not head or head in body.split("\n", 1)[0]:
        return body
    return f"{head}\n{body}"


# --- JUnit XML -------------------------------------------------------------------------------


def parse_junit_xml(data: str | bytes, *, source: str = "junit.xml") -> list[TestResult]:
    """Read a JUnit XML report (pytest --junitxml, Maven Surefire, go-junit-report, jest-junit).

    Every <testcase> under a <testsuites> or <testsuite> root is one test: an <error> child
    makes it "error", <failure> "failed", <skipped> "skipped" (pytest's xfail included),
    anything else "passed" (Surefire's <flakyFailure> is a pass on rerun). Names are pytest
    node ids ("tests/test_x.py::TestA::test_b") when the testcase has a file attribute,
    otherwise "classname::name".
    """
    raw = data.encode() if isinstance(data, str) else data
    if b"<!ENTITY" in raw:
        # Expat would expand entities; no test runner writes them, so refuse rather than risk it.
        raise ResultsError(f"{source}: declares XML entities; a JUnit report never needs them")
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as error:
        raise ResultsError(f"{source}: not well-formed XML ({error})") from None
    if _local(root.tag) not in ("testsuites", "testsuite"):
        raise ResultsError(
            f"{source}: expected a <testsuites> or <testsuite> root element "
            f"(JUnit XML), found <{_local(root.tag)}>"
        )
    results = []
    for index, case in enumerate(root.iter("testcase"), start=1):
        name = case.get("name")
        if not name:
            raise ResultsError(f"{source}: testcase #{index} has no name attribute")
        results.append(_junit_case(case, _junit_name(case, name)))
    return results


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _junit_name(case: ET.Element, name: str) -> str:
    classname = case.get("classname") or ""
    file = (case.get("file") or "").removeprefix("./")
    if file:
        # pytest's xunit1 gives file="tests/test_x.py" classname="tests.test_x.TestA":
        # rebuild the node id that a task's list of required tests is written in.
        module = file.removesuffix(".py").replace("/", ".")
        if classname in ("", module):
            return f"{file}::{name}"
        if classname.startswith(module + "."):
            classes = classname[len(module) + 1 :].replace(".", "::")
            return f"{file}::{classes}::{name}"
    return f"{classname}::{name}" if classname else name


def _junit_case(case: ET.Element, name: str) -> TestResult:
    children = {_local(child.tag): child for child in reversed(case)}
    problems: tuple[tuple[str, Outcome], ...] = (("error", "error"), ("failure", "failed"))
    for tag, outcome in problems:
        child = children.get(tag)
        if child is not None:
            head = child.get("message") or child.get("type") or ""
            return TestResult(name, outcome, _message(head, child.text or "") or tag)
    skipped = children.get("skipped")
    if skipped is not None:
        reason = (skipped.get("message") or "").strip() or first_lines(skipped.text or "", 1)
        xfail = skipped.get("type") == "pytest.xfail"
        return TestResult(name, "skipped", f"xfail: {reason}" if xfail else reason)
    return TestResult(name, "passed")


# --- CTRF JSON -------------------------------------------------------------------------------

CTRF_STATUSES: dict[str, Outcome] = {
    "passed": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "pending": "skipped",
    # "other" is whatever the reporter could not map; not knowing it passed, count it against.
    "other": "error",
}


def parse_ctrf(data: str | bytes, *, source: str = "ctrf.json") -> list[TestResult]:
    """Read a CTRF report: {"results": {"tests": [{"name", "status", "message", "trace"}]}}.

    Statuses passed, failed and skipped map to themselves, pending to skipped, and other to
    error (the reporter did not know what it was, so it is not a pass).
    """
    try:
        document = json.loads(decode(data))
    except json.JSONDecodeError as error:
        raise ResultsError(f"{source}: not valid JSON ({error})") from None
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, dict):
        raise ResultsError(f"{source}: results: expected an object (CTRF JSON), got {results!r}")
    tests = results.get("tests")
    if not isinstance(tests, list):
        raise ResultsError(f"{source}: results.tests: expected a list, got {tests!r}")
    out = []
    for i, test in enumerate(tests):
        where = f"{source}: results.tests[{i}]"
        if not isinstance(test, dict):
            raise ResultsError(f"{where}: expected an object, got {test!r}")
        name, status = test.get("name"), test.get("status")
        if not isinstance(name, str) or not name:
            raise ResultsError(f"{where}.name: expected a non-empty string, got {name!r}")
        if status not in CTRF_STATUSES:
            allowed = ", ".join(CTRF_STATUSES)
            raise ResultsError(f"{where}.status: expected one of {allowed}; got {status!r}")
        message, trace = test.get("message") or "", test.get("trace") or ""
        if not isinstance(message, str) or not isinstance(trace, str):
            raise ResultsError(f"{where}: message and trace must be strings")
        if status == "other":
            message = f"CTRF status 'other'. {message}".strip()
        outcome = CTRF_STATUSES[status]
        out.append(
            TestResult(name, outcome, "" if outcome == "passed" else _message(message, trace))
        )
    return out


# --- pytest's terminal summary ---------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SUMMARY_HEADER = re.compile(r"^=+ short test summary info =+$")
_FINAL = re.compile(
    r"^(?:=+ )?(?P<counts>no tests ran|\d+ [a-z ]+(?:, \d+ [a-z ]+)*)"
    r" in \d+(?:\.\d+)?s(?: \([^)]*\))?(?: =+)?$"
)
_LINE = re.compile(r"^(?P<word>PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (?P<rest>.+)$")
_SKIP = re.compile(r"^\[(?P<n>\d+)\] (?P<where>\S+?:\d+): ?(?P<reason>.*)$")
_TEARDOWN = re.compile(r"^_+ ERROR at teardown of (?P<head>.+?) _+$")
_WORDS: dict[str, Outcome] = {
    "PASSED": "passed",
    "XPASS": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "skipped",
}
_COUNT_WORDS: dict[str, Outcome] = {
    "passed": "passed",
    "xpassed": "passed",
    "failed": "failed",
    "error": "error",
    "errors": "error",
    "skipped": "skipped",
    "xfailed": "skipped",
}
_SEVERITY: dict[Outcome, int] = {"skipped": 0, "passed": 1, "failed": 2, "error": 3}


@dataclass
class _PytestRun:
    named: list[tuple[str, TestResult]] = field(default_factory=list)
    teardown_errors: list[str] = field(default_factory=list)
    counts: dict[Outcome, int] | None = None
    seen: bool = False


def has_pytest_summary(log: str) -> bool:
    """Whether the log holds pytest's short test summary or its final counts line."""
    lines = ANSI.sub("", decode(log)).splitlines()
    return any(_SUMMARY_HEADER.match(line) or _FINAL.match(line) for line in lines)


def parse_pytest_summary(log: str, *, source: str = "pytest log") -> list[TestResult]:
    """Read the tests of every pytest run in a log from its "short test summary info" section.

    With -rA the section names every test: PASSED/XPASS are passes, FAILED failures, ERROR
    errors (a pass with an error at teardown becomes one errored test), SKIPPED/XFAIL skips.
    SKIPPED lines give "file:line", not a test id, so that is the name. Without -rA, pytest
    names only failures and errors (or nothing, under -rN), yet its final line ("3 failed,
    4 passed in 0.1s") still counts every outcome. Counted tests that no line names become
    placeholders named "<unnamed passed test #1>": they keep the counts and the reward
    without a required-test list right, and they can never match a required name.
    """
    runs: list[_PytestRun] = []
    run, in_summary = _PytestRun(), False
    for line in ANSI.sub("", decode(log)).splitlines():
        line = line.rstrip()
        final = _FINAL.match(line)
        if final:
            run.counts = _counts(final["counts"])
            runs.append(run)
            run, in_summary = _PytestRun(), False
        elif _SUMMARY_HEADER.match(line):
            in_summary, run.seen = True, True
        elif in_summary and line.startswith("="):
            in_summary = False
        elif in_summary:
            run.named.extend(_summary_line(line))
        elif teardown := _TEARDOWN.match(line):
            run.teardown_errors.append(teardown["head"])
    if run.seen:
        runs.append(run)  # a summary whose final line the log lost
    if not runs:
        raise ResultsError(
            f"{source}: found neither pytest's 'short test summary info' section nor its "
            "final counts line ('=== 1 failed, 2 passed in 0.1s ==='); run pytest with -rA"
        )
    results: list[TestResult] = []
    unnamed: dict[Outcome, int] = dict.fromkeys(_SEVERITY, 0)
    for run in runs:
        results.extend(_merge(result for _, result in run.named))
        for outcome, count in _unnamed(run).items():
            for _ in range(count):
                unnamed[outcome] += 1
                results.append(
                    TestResult(
                        f"<unnamed {outcome} test #{unnamed[outcome]}>",
                        outcome,
                        "pytest counted this test but the log does not name it (run with -rA)",
                    )
                )
    return results


def _counts(text: str) -> dict[Outcome, int]:
    counts: dict[Outcome, int] = dict.fromkeys(_SEVERITY, 0)
    for item in text.split(", "):
        number, _, word = item.partition(" ")
        if word in _COUNT_WORDS and number.isdigit():
            counts[_COUNT_WORDS[word]] += int(number)
    return counts


def _summary_line(line: str) -> list[tuple[str, TestResult]]:
    match = _LINE.match(line)
    if not match:
        return []
    word, rest = match["word"], match["rest"]
    outcome = _WORDS[word]
    skip = _SKIP.match(rest) if word == "SKIPPED" else None
    if skip:
        count, where, reason = int(skip["n"]), skip["where"], skip["reason"]
        if count == 1:
            return [(word, TestResult(where, outcome, reason))]
        # pytest folds skips with one location and reason into one line: keep the count.
        return [
            (word, TestResult(f"{where} [{i} of {count}]", outcome, reason))
            for i in range(1, count + 1)
        ]
    node_id, message = _split_node_id(rest)
    if word in ("XFAIL", "XPASS"):
        message = f"{word.lower()}: {message}".rstrip(": ")
    return [(word, TestResult(node_id, outcome, message))]


def _split_node_id(rest: str) -> tuple[str, str]:
    """Split "tests/t.py::test_a[x - y] - msg" at the first " - " outside brackets."""
    depth = 0
    for i, char in enumerate(rest):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif depth == 0 and rest.startswith(" - ", i):
            return rest[:i], rest[i + 3 :]
    return rest, ""


def _merge(results: Iterable[TestResult]) -> list[TestResult]:
    """One result per name: the worst outcome wins and the messages are kept in order."""
    merged: dict[str, TestResult] = {}
    for result in results:
        old = merged.get(result.name)
        if old is None:
            merged[result.name] = result
            continue
        worst = max(old, result, key=lambda r: _SEVERITY[r.outcome])
        message = "\n".join(m for m in (old.message, result.message) if m)
        merged[result.name] = TestResult(result.name, worst.outcome, message)
    return list(merged.values())


def _unnamed(run: _PytestRun) -> dict[Outcome, int]:
    if run.counts is None:
        return {}
    named: dict[Outcome, int] = dict.fromkeys(_SEVERITY, 0)
    for _, result in run.named:
        named[result.outcome] += 1
    # A test that passed and then errored at teardown is counted once as passed and once as
    # an error; when no line names it as a pass, that pass is not another unnamed test.
    heads = {_head_line(r.name) for w, r in run.named if w in ("PASSED", "XPASS", "FAILED")}
    double = sum(1 for head in run.teardown_errors if head not in heads)
    expected = dict(run.counts)
    expected["passed"] = max(0, expected["passed"] - double)
    return {outcome: max(0, expected[outcome] - named[outcome]) for outcome in expected}


def _head_line(node_id: str) -> str:
    """pytest's section title for a node id: "TestA.test_b" for "t.py::TestA::test_b"."""
    return ".".join(node_id.split("::")[1:])


# --- reward files ----------------------------------------------------------------------------

_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")


def read_reward(data: str | bytes, *, source: str = "reward.txt") -> float:
    """The reward a task's verifier wrote: reward.txt holds a number; reward.json holds a
    number or {"reward": number, ...}. A file named *.json is read as JSON, any other as text."""
    text = decode(data).strip()
    if source.endswith(".json"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise ResultsError(
                f'{source}: not valid JSON ({error}); write {{"reward": 1}}'
            ) from None
        where = source
        if isinstance(value, dict):
            if "reward" not in value:
                raise ResultsError(f'{source}: no "reward" field; write {{"reward": 1}} or 0')
            value, where = value["reward"], f"{source}: reward"
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ResultsError(f"{where}: expected a finite number such as 1 or 0, got {value!r}")
        return float(value)
    if not _NUMBER.match(text):
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise ResultsError(f"{source}: expected a single number such as 1 or 0, got {shown!r}")
    return float(text)
