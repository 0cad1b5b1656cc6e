"""Parsers for the test runners of scripting languages, by SWE-rebench V2's parser names.

Each reads the whole log (stdout, then stderr) line by line: JavaScript's mocha spec reporter
(`✔ name`, `- name`, `1) name`), jest/vitest-style symbol lines and TAP with `{ }` nesting;
Ruby's minitest-reporters spec lines (`test_x   PASS (0.01s)`) and minitest --verbose
(`Class#test_x = 0.01 s = .`); PHPUnit --testdox / Pest marks (`✓ name  0.01s`); pytest -v,
with xdist's `[gw0]` lines; R's testthat table (`✔ | 12 | context`) and R CMD check's
`* checking x ... OK`; Julia's `Test Summary:` table; Lua's plenary.nvim (`Success || name`).
Names are those of the dataset's expected lists: which lines count and how a name is cut follow
the dataset publisher's parsers exactly, quirks included.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from sprout.logparsers.common import ERROR, FAILED, PASSED, SKIPPED, STATUSES, Parser, Statuses

_DURATION = re.compile(r"\s*\(?\s*\d+(?:\.\d+)?\s*m?s\s*\)?\s*$", re.IGNORECASE)
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _without_duration(name: str) -> str:
    """`name` less a trailing `(53ms)` / `2.5s`: the runner's timing is no part of the test."""
    return _DURATION.sub("", name).strip()


class _Rule(NamedTuple):
    """A line's whole shape (its group 1 the test's name) and the status it gives."""

    pattern: str
    status: str
    overrides: bool = True  # False: a status the test already has stands
    clean: Callable[[str], str] = _without_duration


def _scan(log: str, rules: Sequence[_Rule], prepare: Callable[[str], str] = str.strip) -> Statuses:
    """Each line read by the first rule its whole (prepared) text fits."""
    results: Statuses = {}
    for raw in log.splitlines():
        line = prepare(raw)
        for rule in rules:
            if match := re.fullmatch(rule.pattern, line):
                if name := rule.clean(match[1]):
                    _put(results, name, rule.status, rule.overrides)
                break
    return results


def _put(results: Statuses, name: str, status: str, overrides: bool) -> None:
    """Record a test's status; without `overrides`, a status it already has stands."""
    results[name] = status if overrides else results.get(name, status)


_MOCHA_SKIP = _Rule(r"-\s+(.*)", SKIPPED)
_MOCHA_PASS = _Rule(r"✔\s+(.*)", PASSED, False)
_JS_RULES = (
    _MOCHA_SKIP,
    _Rule(r"\d+\)\s+(.*):", FAILED),
    _Rule(r"\[W\]\s*\d+\)\s+(.*)", FAILED),
    _MOCHA_PASS,
)
_JS_2_RULES = (_MOCHA_SKIP, _Rule(r"\d+\)\s+(.*)", FAILED), _MOCHA_PASS)
_NPX_RULES = (
    _Rule(r"✔\s+(.+?)(?:\s+\(\d+(?:ms)?\))?", PASSED, clean=str.strip),
    _Rule(r"\d+\)\s+(.+)", FAILED, clean=lambda n: re.sub(r"\s+\([^)]+\)$", "", n.strip())),
)


def parse_log_js(log: str) -> Statuses:
    """Mocha's spec reporter where failures show as `[W] 1) name` or the `1) name:` header of
    the failure list; a pass never hides a failure or skip of the same title."""
    return _scan(log, _JS_RULES)


def parse_log_js_2(log: str) -> Statuses:
    """Mocha's spec reporter: every `1) name` line (inline mark or failure list) fails its
    title, which a `✔` of the same title does not undo."""
    return _scan(log, _JS_2_RULES)


def parse_log_npx(log: str) -> Statuses:
    """Mocha run through npx: `✔` passes (less a `(12ms)`), `1) name` fails (less a trailing
    `(file)`); the later line of a title wins, and skips are not read."""
    return _scan(log, _NPX_RULES)


_TAP = re.compile(r"(not ok|ok)\s+\d+\s+-\s+(.*?)(?:\s+#.*)?")


def parse_log_js_3(log: str) -> Statuses:
    """TAP whose subtests open with `{` and close with `}`: a test is named by its enclosing
    titles joined with ` :: `, as leaf titles repeat across suites. Only a title that itself
    holds `# skip`/`# todo` counts as skipped; the usual `# SKIP` directive does not."""
    results: Statuses = {}
    stack: list[str] = []
    for raw in log.splitlines():
        line = raw.strip()
        if line and not line.strip("}"):
            del stack[max(0, len(stack) - len(line)) :]
            continue
        opens = line.endswith("{")
        match = _TAP.fullmatch(line[:-1].rstrip() if opens else line)
        if not match or not (name := _without_duration(match[2])):
            continue
        full = " :: ".join([*stack, name])
        if any(tag in match[2].lower() for tag in ("# skip", "# todo")):
            results[full] = SKIPPED
        elif match[1] == "not ok":
            results[full] = FAILED
        else:
            results.setdefault(full, PASSED)
        if opens:
            stack.append(name)
    return results


_JS_4_MARKS = dict.fromkeys("✔✓", PASSED) | dict.fromkeys("✘✖\u00d7", FAILED)
_JS_4_MARKS |= dict.fromkeys("○◌◦⚪", SKIPPED)
_JS_4_SKIP_TAGS = ("(skipped)", "[skip]", "[skipped]", "[pending]", "[todo]")


def _untagged(payload: str) -> str:
    """A symbol line's text less a leading `[tag]:` (a worker or project label) or `:`."""
    payload = payload.strip()
    if payload.startswith("[") and "]:" in payload:
        payload = payload.split("]:", 1)[1].strip()
    return payload[1:].strip() if payload.startswith(":") else payload


def _js_4_line(line: str) -> tuple[str, str] | None:
    """(name, status) of one stripped line, if it reports a test."""
    if (status := _JS_4_MARKS.get(line[0])) is not None:
        return _without_duration(_untagged(line[1:])), status
    if any(tag in line.lower() for tag in _JS_4_SKIP_TAGS):
        for tag in _JS_4_SKIP_TAGS:  # only lower-case tags leave the name
            line = line.replace(tag, "")
        return _without_duration(line), SKIPPED
    return None


def parse_log_js_4(log: str) -> Statuses:
    """Jest/vitest/ava-style lines led by a pass, fail or skip symbol, or tagged `[skip]`;
    a pass never hides an earlier failure or skip of the same name."""
    results: Statuses = {}
    for raw in log.splitlines():
        if (line := raw.strip()) and (found := _js_4_line(line)) and found[0]:
            _put(results, *found, overrides=found[1] != PASSED)
    return results


_RUBY_SUITE = re.compile(r"[A-Z][A-Za-z0-9_]*")
_RUBY_SPEC = re.compile(
    r"\s*(test[^A-Z\n]+?)\s+(PASS(?:ED)?|FAIL(?:URE)?|ERROR|SKIP(?:PED)?)(?:\s*\([0-9.]+s\))?"
)
_RUBY_SEVERITY = {PASSED: 0, SKIPPED: 0, FAILED: 1, ERROR: 2}
_RUBY_WORDS = {"PASS": PASSED, "FAIL": FAILED, "ERRO": ERROR, "SKIP": SKIPPED}


def parse_log_ruby_v1(log: str) -> Statuses:
    """minitest-reporters' spec output: a test is `Suite::test_name` under the last bare
    CamelCase suite line; of repeated runs the worst (error > failure > pass/skip) stands."""
    results: Statuses = {}
    suite = ""
    for raw in log.splitlines():
        line = raw.rstrip()
        if _RUBY_SUITE.fullmatch(line):
            suite = line
        elif match := _RUBY_SPEC.fullmatch(line):
            name = f"{suite}::{match[1].strip()}" if suite else match[1].strip()
            status = _RUBY_WORDS[match[2][:4]]
            if name not in results or _RUBY_SEVERITY[status] > _RUBY_SEVERITY[results[name]]:
                results[name] = status
    return results


_MINITEST_VERBOSE = re.compile(r"(.+?#.+?)\s+=\s+[\d.]+\s+s\s+=\s+([.FES])")
_MINITEST_MARKS = {".": PASSED, "F": FAILED, "E": FAILED, "S": SKIPPED}


def parse_log_ruby_v2(log: str) -> Statuses:
    """minitest --verbose (`Class#test_x = 0.01 s = .`): named `Class#test_x`; an error
    counts as a failure, and the last run of a name wins."""
    results: Statuses = {}
    for raw in log.splitlines():
        if match := _MINITEST_VERBOSE.fullmatch(raw.strip()):
            results[match[1]] = _MINITEST_MARKS[match[2]]
    return results


_PHP_NOISE = ("___", "---", "Tests:", "Duration:")
_PHP_SUITE_FAIL = re.compile(r"\s*FAIL(?:ED)?\s+(\S.+)", re.IGNORECASE)
_PHP_TIMES = (re.compile(r"\s{2,}\d+(?:\.\d+)?s\s*$"), re.compile(r"\s+\d+(?:\.\d+)?s\s*$"))
_PHP_INLINE_SKIP = re.compile(r"\(skipped\)|\bSKIPPED\b", re.IGNORECASE)


def _php_marked(mark: str, flags: int = 0) -> tuple[re.Pattern[str], ...]:
    """A `mark name  0.01s` line's shapes: with a timing column first, then without."""
    head = rf"\s*(?:{mark})\s+(.+?)"
    return re.compile(head + r"\s{2,}\d+\.?\d*s\b.*", flags), re.compile(head + r"\s*", flags)


_PHP_MARKS = (  # (shapes, status, overrides): the first whose mark fits decides the line
    (_php_marked("\u2a2f|x", re.IGNORECASE), FAILED, True),
    (_php_marked("-"), SKIPPED, True),
    (_php_marked("✓|✔"), PASSED, False),
)


def _php_clean(name: str) -> str:
    """The name less up to two trailing timings (one after two spaces, then any)."""
    name = name.rstrip()
    for timing in _PHP_TIMES:
        name = timing.sub("", name)
    return name.strip()


def _php_line(line: str, results: Statuses) -> None:
    """Record what one (right-stripped, non-noise) line says."""
    if match := _PHP_SUITE_FAIL.fullmatch(line):
        results[_php_clean(match[1])] = FAILED
        return
    for shapes, status, overrides in _PHP_MARKS:
        match = next((m for shape in shapes if (m := shape.fullmatch(line))), None)
        if match is None:
            continue
        if name := _php_clean(match[1]):
            _put(results, name, status, overrides)
        return
    if _PHP_INLINE_SKIP.search(line) and (name := _php_clean(line)) and name not in results:
        results[name] = SKIPPED


def parse_log_php_v1(log: str) -> Statuses:
    """PHPUnit --testdox / Pest: `✓`, a cross (or `x`) and `-` lead a test's line and a
    `FAIL <name>` line fails that name; any line saying `skipped` is itself named skipped."""
    results: Statuses = {}
    for raw in log.splitlines():
        line = raw.rstrip()
        if line and not line.strip().startswith(_PHP_NOISE):
            _php_line(line, results)
    return results


_WORDS = "|".join(STATUSES)
_NEBO_XDIST = re.compile(r"\[gw\d+\]\s+\[[^\]]*\]\s+(\w+)\s+(.*)")
_NEBO_TRAILING = re.compile(rf"(\S.*?)\s+({_WORDS})\s+\[[^\]]*\]\s+in\s+\d+(?:\.\d+)?s")
_NEBO_LEADING = re.compile(rf"({_WORDS})\s+(.*)")
_CONTROL = str.maketrans("", "", "".join(map(chr, range(1, 32))))


def _nebo_line(line: str) -> tuple[str, str] | None:
    """(name, status) of one cleaned line, if it reports a test."""
    match = _NEBO_XDIST.fullmatch(line)
    if match and match[1] in STATUSES:
        return match[2].split(" in ")[0].strip(), match[1]
    if match := _NEBO_TRAILING.fullmatch(line):
        return match[1].strip(), match[2]
    if match := _NEBO_LEADING.fullmatch(line):
        return match[2].split(" in ")[0].strip(), match[1]
    return None


def parse_log_pytest_nebo(log: str) -> Statuses:
    """pytest -v with xdist (`[gw0] [ 5%] PASSED id`), plain (`id PASSED [ 5%] in 0.1s`) or
    summary (`FAILED id - msg`) lines; the id is cut at ` in ` (a duration), the last wins."""
    results: Statuses = {}
    for raw in log.splitlines():
        line = re.sub(r"\[\d+m", "", raw).translate(_CONTROL).strip()
        if found := _nebo_line(line):
            results[found[0]] = found[1]
    return results


_JULIA_ROW = re.compile(r"\s*(.+?)\s+\|(.+)")


def _julia_status(columns: str, header: tuple[bool, bool]) -> str | None:
    """A row's status from its counts (Pass, Fail, Error, Broken, Total); columns Julia
    leaves blank are told apart only by the header and the row's leading gap."""
    counts = [part for part in columns.split() if part.isdigit()]
    if len(counts) < 2:
        return None
    total = int(counts[-1])
    if len(counts) == 2:
        blank_pass = len(columns) - len(columns.lstrip()) >= 10
        return ERROR if int(counts[0]) != total or blank_pass else PASSED
    if len(counts) == 3:
        has_fail, has_error = header
        if int(counts[1]) == 0:
            return PASSED
        return FAILED if has_fail and not has_error else ERROR
    failures, errors = int(counts[1]), int(counts[2])
    return ERROR if errors > 0 else FAILED if failures > 0 else PASSED


def parse_log_julia(log: str) -> Statuses:
    """Julia's `Test Summary:` tables: every row after the first header is a testset, named
    as printed (nesting indent dropped); errors outrank failures."""
    results: Statuses = {}
    header: tuple[bool, bool] | None = None  # (has Fail column, has Error column)
    for raw in log.splitlines():
        if "Test Summary:" in raw:
            columns = raw.split("|")[1] if "| Pass" in raw else None
            known = header or (False, False)
            header = ("Fail" in columns, "Error" in columns) if columns is not None else known
        elif header is not None and (match := _JULIA_ROW.fullmatch(raw)):
            status = _julia_status(match[2], header)
            if status is not None:
                results[match[1].strip()] = status
    return results


_R_TIMING = re.compile(r"\s*\[\s*\d+(?:\.\d+)?\s*[a-zA-Z]+\]$")
_R_CONTEXT_ROW = re.compile(r"([✔✖])\s+\|[^|]+\|\s+(.+)")
_R_PROBLEM = re.compile(r"(Failure|Error)\s+\([^)]+\):\s+(.+)")


def _r_name(name: str) -> str:
    return _R_TIMING.sub("", name.strip()).strip()


def _r_failed_section(lines: list[str]) -> Statuses:
    """`Failure (file:line): test` / `Error (...)` entries of the `── Failed tests ──` list."""
    results: Statuses = {}
    inside = False
    for line in lines:
        if line.startswith(("── Failed tests ──", "== Failed tests ==")):
            inside = True
        elif inside and line.startswith(("[ FAIL", "══ Results ══")):
            break
        elif inside and (match := _R_PROBLEM.fullmatch(line)):
            results[_r_name(match[2])] = FAILED if match[1] == "Failure" else ERROR
    return results


def parse_log_r(log: str) -> Statuses:
    """testthat's progress table names each test file's context (`✔ | 12 | parsing`); the
    failed-tests list, where printed in the `── Failed tests ──` form, then names tests too."""
    lines = [raw.strip() for raw in log.splitlines()]
    contexts = {
        _r_name(m[2]): PASSED if m[1] == "✔" else FAILED
        for line in lines
        if (m := _R_CONTEXT_ROW.fullmatch(line))
    }
    return {**contexts, **_r_failed_section(lines)}


_CHECK_WORDS = dict.fromkeys(("OK", "NOTE", "NOTES"), PASSED) | {"SKIPPED": SKIPPED}
_CHECK_WORDS |= dict.fromkeys(("WARNING", "WARNINGS", "FAIL", "FAILED"), FAILED)
_CHECK_WORDS |= dict.fromkeys(("ERROR", "ERRORS"), ERROR)
_CHECK = re.compile(r"\* checking (.+?) \.\.\.(?: ([A-Z]+))?")


def parse_log_r_v2(log: str) -> Statuses:
    """R CMD check: each `* checking <what> ... OK` is a test named `<what>`; a check whose
    verdict comes lines later takes the first of those lines that opens with a verdict word
    (meanwhile other lines, checks included, are passed over); NOTEs pass."""
    results: Statuses = {}
    pending: str | None = None
    for raw in log.splitlines():
        if not (line := raw.strip()):
            continue
        if pending is not None:
            words = line.strip(".:!").split()
            if words and (status := _CHECK_WORDS.get(words[0].upper())):
                results[pending] = status
                pending = None
        elif match := _CHECK.fullmatch(line):
            if match[2] is None:
                pending = match[1]
            else:
                results[match[1]] = _CHECK_WORDS.get(match[2], PASSED)
    if pending is not None:
        results.setdefault(pending, PASSED)
    return results


_PLENARY_RULES = (
    _Rule(r"Fail(?:ed)?\s*\|\|\s*(.+?)\s*", FAILED, clean=str.strip),
    _Rule(r"(?i:skip(?:ped)?)\s*\|\|\s*(.+?)\s*", SKIPPED, False, str.strip),
    _Rule(r"Success\s*\|\|\s*(.+?)\s*", PASSED, overrides=False, clean=str.strip),
)


def parse_lue_nvim(log: str) -> Statuses:
    """plenary.nvim's busted runner (`Success || describe it`): named by the full title after
    `||`; a failure anywhere outranks passes and skips of the same title."""
    return _scan(log, _PLENARY_RULES, prepare=lambda raw: _SGR.sub("", raw).rstrip())


# Every `parse_*` function above, by its own name (the publisher's names).
PARSERS: dict[str, Parser] = {
    name: parser for name, parser in globals().items() if name.startswith("parse_")
}
# The publisher's own aliases of its (misspelt) plenary parser.
PARSERS |= dict.fromkeys(("parse_lua_nvim", "parse_log_lua_nvim"), parse_lue_nvim)
