"""Test logs of JVM runners, and the JUnit XML reports other runners print, read the way the
SWE-rebench V2 harness reads them (its `install_config.log_parser` names):
- Maven Surefire/Failsafe console output: `Running <class>`, the `Tests run: N, Failures: N,
  Errors: N, Skipped: N` counts, `[ERROR] <Class>.<method>:<line>` failure lines, one
  `-Dtest=<name>` run per test ending in `BUILD SUCCESS|FAILURE`, and the reactor summary
  `[INFO] <module> ....... SUCCESS [  1.2 s]`.
- JUnit XML reports cat into the log (sbt, Gradle, Maven, R's testthat junit reporter):
  `<testcase name=.. classname=..>` with a `<failure>`, `<error>` or `<skipped>` child.
- ScalaTest under sbt (`[info] - <test> (<time>)`, `*** FAILED ***`, `!!! IGNORED !!!`) and the
  `+ <test> 12ms` / `x <test> 3ms` lines of ZIO Test style runners.
- Leiningen's clojure.test output: `lein test <namespace>`, `FAIL in`, `ERROR in`.

A row's expected names come from its publisher's parsers, so each keeps their rules, quirks
included; logs are read raw, colours left in, except where a runner's rules strip them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator

from sprout.logparsers.common import ERROR, FAILED, PASSED, SKIPPED, Parser, Statuses

_JAVA_NAME = "[A-Za-z0-9_$.]"
_MAVEN_RUNNING = re.compile(rf"(?:\[INFO\]\s+)?Running\s+({_JAVA_NAME}+)")
_MAVEN_FAILED_TEST = re.compile(
    rf"\[ERROR\]\s+(?P<owner>{_JAVA_NAME}+)\.(?P<member>{_JAVA_NAME}+?)(?::\d+)?\b"
)
_COUNT_WORDS = ("Tests run:", "Failures:", "Errors:", "Skipped:")


def _counts(gap: str) -> re.Pattern[str]:
    """Surefire's `Tests run: 3, Failures: 1, Errors: 0, Skipped: 1`, `gap` after each mark."""
    return re.compile(f",{gap}".join(f"{word}{gap}(\\d+)" for word in _COUNT_WORDS))


_MAVEN_COUNTS = _counts(r"\s*")
_PLAIN_COUNTS = _counts(r"\s+")
_PLAIN_RUNNING = re.compile(r"Running\s+(.+)")
_REACTOR_LINE = re.compile(
    r"\[INFO\]\s+(?P<module>.+?)\s+\.{2,}\s+(?P<word>SUCCESS|FAILURE|SKIPPED)(?:[\s\[]|$)"
)
_REACTOR_STATUS = {"SUCCESS": PASSED, "FAILURE": FAILED, "SKIPPED": SKIPPED}
_NO_DTEST_YET = "---NO TEST NAME FOUND YET---"
_DTEST = re.compile(r"-Dtest=(?=\S)")
_TESTCASE_TAG = re.compile(r"<testcase(?!\w)([^>]*)>")
_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
_CHILD_STATUS = {"failure": FAILED, "error": ERROR, "skipped": SKIPPED}


def _stripped_lines(log: str) -> Iterator[str]:
    """The log's non-blank lines, without their surrounding whitespace."""
    return (line for raw in log.splitlines() if (line := raw.strip()))


def _class_status(failures: int, errors: int, skipped: int) -> str:
    """A test class's status from its Surefire counts: any failure or error fails it."""
    if failures or errors:
        return FAILED
    return SKIPPED if skipped else PASSED


def parse_java_mvn(log: str) -> Statuses:
    """Maven Surefire console output. A failure line names `<class>.<method>` (ERROR where it
    shows an exception other than an assertion) and fails its class; the counts line names the
    class (after ` in `, else the last `Running`); testcases printed as XML and `-Dtest=` runs
    fill in names not yet seen (with none found, each `Running` class passes). The first
    status a name gets stays, except a failure line's."""
    results: Statuses = {}
    running: str | None = None
    seen: set[str] = set()
    for line in _stripped_lines(log):
        if found := _MAVEN_RUNNING.fullmatch(line):
            running = found[1]
            seen.add(running)
        elif found := _MAVEN_FAILED_TEST.match(line):
            exception = "Exception" in line and "AssertionError" not in line
            results[f"{found['owner']}.{found['member']}"] = ERROR if exception else FAILED
            results.setdefault(found["owner"], FAILED)
        elif found := _MAVEN_COUNTS.search(line):
            _, sep, after = line.rpartition(" in ")
            owner = after.strip().rstrip(".:;") if sep else running
            if owner:
                results.setdefault(owner, _class_status(*map(int, found.groups()[1:])))
            running = None
    for extra in (parse_log_sbt(log), _maven_single_test_runs(log)):
        for name, status in extra.items():
            results.setdefault(name, status)
    return results or dict.fromkeys(seen, PASSED)


def _maven_single_test_runs(log: str) -> Statuses:
    """`mvn -Dtest=<name>` runs, one per test: the build's outcome is the last named test's.
    A build with no `-Dtest=` before it is recorded under a placeholder name, as its
    publisher's harness does."""
    results: Statuses = {}
    target = _NO_DTEST_YET
    for raw in log.split("\n"):
        line = raw.strip()
        starts = [found.end() for found in _DTEST.finditer(line)]
        if starts:
            target = line[starts[-1] :].split(maxsplit=1)[0]
        if line.endswith(("BUILD SUCCESS", "BUILD FAILURE")):
            results[target] = PASSED if line.endswith("SUCCESS") else FAILED
    return results


def parse_java_mvn_v2(log: str) -> Statuses:
    """Maven's reactor summary: each module's `SUCCESS|FAILURE|SKIPPED` line names the module
    (a build's modules are its tests here). The first counts line adds `__suite__`: FAILED on
    failures, ERROR on errors, SKIPPED when every test was skipped (none run counts)."""
    results: Statuses = {}
    for line in _stripped_lines(log):
        if found := _REACTOR_LINE.match(line):
            results[found["module"]] = _REACTOR_STATUS[found["word"]]
        elif found := _MAVEN_COUNTS.search(line):
            run, failures, errors, skipped = map(int, found.groups())
            results.setdefault("__suite__", _run_status(run, failures, errors, skipped))
    return results


def _run_status(run: int, failures: int, errors: int, skipped: int) -> str:
    """A whole run's status from its counts, failures before errors."""
    if failures:
        return FAILED
    if errors:
        return ERROR
    return SKIPPED if skipped == run else PASSED


def parse_logs_kotlin_junit(log: str) -> Statuses:
    """Plain Surefire output, lines starting `Running <class>` (no `[INFO]`): the next counts
    line at a line's start gives that class's status, the latest such line winning."""
    results: Statuses = {}
    running: str | None = None
    for line in _stripped_lines(log):
        if found := _PLAIN_RUNNING.fullmatch(line):
            running = found[1]
        elif (found := _PLAIN_COUNTS.match(line)) and running:
            results[running] = _class_status(*map(int, found.groups()[1:]))
            running = None
    return results


def parse_log_sbt(log: str) -> Statuses:
    """JUnit XML testcases that sbt (or any runner) printed into the log, read as text so noise
    and cut documents do not matter: named `<classname> <name>`, the status the first of
    failure, error, skipped in the body, the last report of a name winning."""
    results: Statuses = {}
    position = 0
    while tag := _TESTCASE_TAG.search(log, position):
        attributes = dict(_ATTRIBUTE.findall(tag[1]))
        name = attributes.get("name")
        if not name:
            position = tag.end()
            continue
        body, position = _testcase_body(log, tag)
        owner = attributes.get("classname", "")
        status = next((s for child, s in _CHILD_STATUS.items() if f"<{child}" in body), PASSED)
        results[f"{owner} {name}".strip() if owner else name] = status
    return results


def _testcase_body(log: str, tag: re.Match[str]) -> tuple[str, int]:
    """A testcase's body and where reading goes on: to its `</testcase>`, or, where none
    follows, the next 4096 characters (the tags in them read again)."""
    if tag[1].strip().endswith("/"):
        return "", tag.end()
    close = log.find("</testcase>", tag.end())
    if close == -1:
        return log[tag.end() : tag.end() + 4096], tag.end()
    return log[tag.end() : close], close + len("</testcase>")


def _xml_findall(document: str, path: str) -> list[ET.Element]:
    """The document's elements at `path`; none where it is not well-formed XML."""
    try:
        return ET.fromstring(document).findall(path)
    except ET.ParseError:
        return []


def _case_status(case: ET.Element, order: tuple[str, ...]) -> str:
    """The status of the first child of `order` the testcase has; PASSED with none."""
    return next((_CHILD_STATUS[tag] for tag in order if case.find(tag) is not None), PASSED)


def _gradle_report_blocks(log: str) -> Iterator[str]:
    """Lines from one starting `<?xml` to the next starting `</testsuite>`, as Gradle's
    per-class reports are cat one after another."""
    block: list[str] | None = None
    for line in log.split("\n"):
        text = line.strip()
        if text.startswith("<?xml"):
            block = [line]
        elif block is not None:
            block.append(line)
            if text.startswith("</testsuite>"):
                yield "\n".join(block)
                block = None


def parse_log_gradlew_v1(log: str) -> Statuses:
    """Gradle's JUnit XML reports cat into the log: named `<name> (<classname>)` as JUnit 4
    prints a test; skipped is read before failure and error."""
    results: Statuses = {}
    for block in _gradle_report_blocks(log):
        for case in _xml_findall(block, ".//testcase"):
            name, owner = case.get("name", ""), case.get("classname", "")
            full = f"{name} ({owner})" if owner and name else name
            results[full] = _case_status(case, ("skipped", "failure", "error"))
    return results


def _combined_documents(log: str) -> Iterator[str]:
    """Each span from `<?xml` to the next `</testsuites>`."""
    position = 0
    while (start := log.find("<?xml", position)) != -1:
        end = log.find("</testsuites>", start)
        if end == -1:
            return
        position = end + len("</testsuites>")
        yield log[start:position]


def parse_combined_test_reports(log: str) -> Statuses:
    """Several JUnit XML reports (`<testsuites>` documents) printed one after another: named
    `<classname>::<name>` (a missing attribute reads `None`), later reports winning."""
    results: Statuses = {}
    for document in _combined_documents(log):
        for case in _xml_findall(document, ".//testcase"):
            full = f"{case.get('classname')}::{case.get('name')}"
            results[full] = _case_status(case, ("failure", "skipped", "error"))
    return results


def parse_logs_r_junit(log: str) -> Statuses:
    """testthat's junit reporter: the first XML document (to `</testsuites>`), its testcases
    under nested `<testsuite>`s named `<classname>::<name>` (the name alone without a class)."""
    start = log.find("<?xml")
    if start == -1:
        return {}
    document = log[start:]
    end = document.find("</testsuites>")
    document = document if end == -1 else document[: end + len("</testsuites>")]
    results: Statuses = {}
    for suite in _xml_findall(document, ".//testsuite"):
        for case in suite.findall("testcase"):
            name, owner = case.get("name", ""), case.get("classname", "")
            full = f"{owner}::{name}" if owner else name
            results[full] = _case_status(case, ("failure", "error", "skipped"))
    return results


def parse_log_lein(log: str) -> Statuses:
    """Leiningen's clojure.test output, one status per namespace (clojure.test names no passing
    test): each `lein test <ns>...` passes its namespaces unless a later `FAIL in` or
    `ERROR in` under the latest of them says otherwise; `:only <ns>/<test>` counts as `<ns>`."""
    results: Statuses = {}
    namespace: str | None = None
    for line in _stripped_lines(log):
        if line.startswith("lein test "):
            namespace = _lein_namespaces(line.removeprefix("lein test ").split(), results)
        elif namespace and line.startswith("FAIL in"):
            results[namespace] = FAILED
        elif namespace and line.startswith("ERROR in"):
            results[namespace] = ERROR
    return results


def _lein_namespaces(words: list[str], results: Statuses) -> str | None:
    """Passes the namespaces a `lein test` line names (it names at least one word), where not
    yet seen; the last of them."""
    if words[:1] == [":only"]:
        words = [" ".join(words[1:]).partition("/")[0].strip()]
    for word in filter(None, words):
        results.setdefault(word, PASSED)
    return words[-1] or None


def _scalatest_dash(tail: str) -> re.Pattern[str]:
    """A ScalaTest `[info] - <test> <tail>` line, the test's name as short as `tail` allows."""
    return re.compile(rf"\[info\]\s+-\s+(.*?)\s+{tail}")


_TIMED = r"\([^)]+\)"
_SCALATEST_RULES: tuple[tuple[Callable[[str], re.Match[str] | None], str], ...] = (
    (_scalatest_dash(rf"\*{{3}}\s+FAILED\s+\*{{3}}\s+{_TIMED}").fullmatch, FAILED),
    (_scalatest_dash(rf"!{{3}}\s+CANCELED\s+!{{3}}\s+{_TIMED}").fullmatch, SKIPPED),
    (_scalatest_dash(r"!{3}\s+IGNORED\s+!{3}").match, SKIPPED),
    (_scalatest_dash(_TIMED).fullmatch, PASSED),
)


def parse_log_scala(log: str) -> Statuses:
    """ScalaTest under sbt with durations on: `[info] - <test> (<time>)` passes, `*** FAILED ***`
    fails, `!!! CANCELED !!!` / `!!! IGNORED !!!` skip; named by the test's text alone. A pass
    never overwrites another status, which would hide a retried test's failure."""
    results: Statuses = {}
    for line in _stripped_lines(log):
        for read, status in _SCALATEST_RULES:
            if found := read(line):
                if status == PASSED:
                    results.setdefault(found[1], PASSED)
                else:
                    results[found[1]] = status
                break
    return results


_SGR_OR_BARE = re.compile(r"\x1b\[[0-9;]*m|\[[0-9]{1,2}m")
_ELAPSED = r"[\d.]+[mμn]?s"


def _outcome_rules(mark: str, colour: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A `<mark> <test> <elapsed>` line: as colour codes whose escape byte was lost leave it,
    and with every colour code gone."""
    bare = re.compile(rf"\s*{mark}\s+\[0m\[{colour}m(.*?)\[0m\s+\[90m{_ELAPSED}\[0m\s*")
    return bare, re.compile(rf"\s*{mark}\s+(.*?)\s+{_ELAPSED}\s*")


_OUTCOME_RULES = ((_outcome_rules("x", "31"), FAILED), (_outcome_rules(r"\+", "32"), PASSED))


def parse_log_scala_v2(log: str) -> Statuses:
    """ZIO Test / munit style output, `+ <test> 12ms` green or `x <test> 3ms` red: named by the
    test's text with its colour codes taken out (kept where the escape bytes were already
    lost and the line still reads as coloured), the latest line winning."""
    results: Statuses = {}
    for line in _stripped_lines(log):
        plain = _SGR_OR_BARE.sub("", line)
        for (bare, clean), status in _OUTCOME_RULES:
            if found := bare.fullmatch(line) or clean.fullmatch(plain):
                results[found[1]] = status
                break
    return results


_V3_TEST = re.compile(r"\[info\]\s+-\s+(.*?)(?:\s+\*{3}\s+([A-Z]+)\s+\*{3})?")
_V3_SUITE = re.compile(r"\[info\]\s+([^-].*)")
_V3_DURATION = re.compile(r"\s*\(\d+\s+\w+\)\Z")
_V3_MARKS = {"PASSED": PASSED, "FAILED": FAILED, "ERROR": ERROR, "ABORTED": ERROR}
_V3_MARKS |= dict.fromkeys(("SKIPPED", "IGNORED", "CANCELED", "CANCELLED", "PENDING"), SKIPPED)
_V3_NOT_SUITES = (
    *("Run completed", "Total number", "Suites:", "Tests:", "All tests", "compiling"),
    *("done compiling", "loading", "welcome to", "set current"),
)


def parse_log_scala_v3(log: str) -> Statuses:
    """ScalaTest under sbt, named `<suite or scope>: <test>` after the latest `[info]` line that
    is no test and no sbt/summary noise. Only a `*** <MARK> ***` at the line's end sets a
    status (an unknown mark fails); else the test passes unless it already has one, its
    `(<n> <unit>)` duration dropped from the name."""
    results: Statuses = {}
    suite: str | None = None
    for line in _stripped_lines(log):
        if line.startswith("[info] -"):
            if found := _V3_TEST.fullmatch(line):
                test = _V3_DURATION.sub("", found[1].strip())
                full = f"{suite}: {test}" if suite else test
                if found[2]:
                    results[full] = _V3_MARKS.get(found[2], FAILED)
                else:
                    results.setdefault(full, PASSED)
        elif (found := _V3_SUITE.fullmatch(line)) and _is_scope(text := found[1].strip()):
            suite = text
    return results


def _is_scope(text: str) -> bool:
    """Whether an `[info]` line's text names a suite or scope, not sbt's or a summary's."""
    return bool(text) and not any(noise in text for noise in _V3_NOT_SUITES)


PARSERS: dict[str, Parser] = {
    "parse_java_mvn": parse_java_mvn,
    "parse_log_java_mvn": parse_java_mvn,
    "parse_java_mvn_v2": parse_java_mvn_v2,
    "parse_log_java_mvn_v2": parse_java_mvn_v2,
    "parse_log_gradlew_v1": parse_log_gradlew_v1,
    "parse_log_sbt": parse_log_sbt,
    "parse_log_junit": parse_log_sbt,
    "parse_logs_kotlin_junit": parse_logs_kotlin_junit,
    "parse_log_kotlin_junit": parse_logs_kotlin_junit,
    "parse_logs_r_junit": parse_logs_r_junit,
    "parse_log_r_junit": parse_logs_r_junit,
    "parse_log_scala": parse_log_scala,
    "parse_log_scala_v2": parse_log_scala_v2,
    "parse_log_scala_v3": parse_log_scala_v3,
    "parse_log_lein": parse_log_lein,
    "parse_combined_test_reports": parse_combined_test_reports,
}
