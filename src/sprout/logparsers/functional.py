"""Logs of the functional languages' test runners: Haskell, OCaml and Elixir.

What each parser reads:

- `parse_log_haskell`: any mix of tasty (`name: OK (0.01s)`), hspec's marks (`✔ name`,
  `name [✔]`, the numbered `1) name` failure list) and HUnit (`### Failure in: name`).
- `parse_log_haskell_v2`: hspec's plain tree under cabal's `Test suite spec: RUNNING...`, a
  leaf `FAILED [n]` or `PENDING`, then its `Failures:` list; a test is its path of groups.
- `parse_log_ocaml`: alcotest's `[OK]   suite   0   title.` lines.
- `parse_log_ocaml_v2`: dune's verbose `Running[n]: (cd dir && ./test.exe)` and `Output[n]:`
  blocks; a test is a test binary, judged by the words of its output.
- `parse_log_ocaml_v3`: `[TOKEN] name` lines of inline and expect test runners.
- `parse_log_ocaml_v4`, `parse_log_ocaml_v5`: lines that open with a status word, coloured or
  not (`PASSED name   detail`).
- `parse_log_elixir`: ExUnit under `mix test --trace` (`* test name (1.2ms) [L#12]`) and
  its numbered failure headers (`1) test name (Module)`).

Each gives the map the SWE-rebench V2 publisher's parser of that name gives, on any log: the
dataset's expected test names were read with those parsers, so their quirks are kept (said
where they bite).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from sprout.logparsers.common import (
    ERROR,
    FAILED,
    PASSED,
    SKIPPED,
    Parser,
    Statuses,
    strip_ansi,
)

_COLOUR = re.compile("\x1b\\[[0-9;]*m")
"""Colour codes only (SGR), the part of ANSI the Haskell and OCaml v4 parsers take out."""

_RANK = {PASSED: 0, SKIPPED: 1, FAILED: 2, ERROR: 3}


def _keep_worst(results: Statuses, name: str, status: str) -> None:
    """A test reported twice keeps its worst report (a tie takes the later one)."""
    if name and (name not in results or _RANK[status] >= _RANK[results[name]]):
        results[name] = status


def _record(results: Statuses, name: str, status: str, tentative: bool) -> None:
    """A tentative report (a pass mark) never replaces an earlier one; any other report does."""
    if tentative:
        results.setdefault(name, status)
    else:
        results[name] = status


# Haskell: tasty, hspec, HUnit ------------------------------------------------------------

_TASTY_WORDS = {
    "OK": PASSED,
    "PASS": PASSED,
    "FAIL": FAILED,
    "ERROR": ERROR,
    "SKIP": SKIPPED,
    "PENDING": SKIPPED,
}
_TASTY = re.compile(r"\s*(?P<name>.+?)\s*:\s*(?P<word>OK|PASS|FAIL|ERROR|SKIP|PENDING)(?!\w)")
_BRACKETED = re.compile(r"\s+(?P<name>.+?)\s+\[(?P<mark>[✓✔✗✘])\]")
_MARKED = re.compile(r"\s*(?P<mark>[✓✔✗✘])\s+(?P<name>.+)")
_NUMBERED = re.compile(r"\s*\d+\)\s+(?P<name>.+)")
_HUNIT = re.compile(r"###\s+(?P<kind>Failure|Error)\s+in:\s+(?P<name>.+)")
_CABAL_NOISE = ("Test suite ", "Linking ", "Building ", "Running  ")
_PASS_MARKS = "✓✔"


def _haskell_line(line: str) -> tuple[str, str, bool] | None:
    """(name, status, whether an earlier report of the test wins) for one report line.

    Each runner names a test by its leaf title only, so one title in two groups is one test.
    A tasty word always overrides an earlier report; an hspec pass mark never does."""
    if hit := _TASTY.match(line):
        return hit["name"].strip(), _TASTY_WORDS[hit["word"]], False
    if hit := _BRACKETED.fullmatch(line):
        passed = hit["mark"] in _PASS_MARKS
        return hit["name"].strip(), PASSED if passed else FAILED, passed
    if hit := _MARKED.fullmatch(line):
        if hit["mark"] not in _PASS_MARKS:
            return hit["name"].strip(), FAILED, False
        return _without_timing(hit["name"]), PASSED, True
    if hit := _NUMBERED.fullmatch(line):
        return hit["name"].strip(), FAILED, False
    if hit := _HUNIT.fullmatch(line):
        return hit["name"].strip(), FAILED if hit["kind"] == "Failure" else ERROR, False
    return None


def _without_timing(title: str) -> str:
    """hspec's `✔ title (0.01s)`: a line ending in `)` loses all from the first ` (` on (the
    publisher's cut, which also cuts a title that holds parentheses)."""
    cut = re.search(r"\s+\(", title)
    return (title[: cut.start()] if cut and title.endswith(")") else title).strip()


def parse_log_haskell(log: str) -> Statuses:
    """tasty, hspec and HUnit lines mixed, as a cabal or stack test run prints them; the
    build's own lines (`Building `, `Linking `, `Test suite `) are never tests."""
    results: Statuses = {}
    for raw in log.splitlines():
        line = _COLOUR.sub("", raw).rstrip()
        if not line or any(noise in line for noise in _CABAL_NOISE):
            continue
        if (report := _haskell_line(line)) is not None:
            _record(results, *report)
    return results


# Haskell: hspec's plain tree ---------------------------------------------------------------

_HSPEC_INFO = "Golden and Actual output didn't change"
_FAILURES_END = ("To rerun use:", "Randomized with seed", "Finished in ", "Test suite ")
_NOT_A_SPEC = (
    "Downloading", "Building", "Installing", "Completed", "Starting", "Preprocessing",
    "Configuring", "Linking", "Resolving dependencies", "Build profile",
    "In order, the following will be built", "Error:", "Test suite ", "Running ",
)  # fmt: skip
_LEAF_FAILED = re.compile(r"\s+FAILED\s*\[\d+\]$")
_LEAF_PENDING = re.compile(r"\s+(?:PENDING|SKIPPED)\b", re.IGNORECASE)


def _hspec_failures(lines: list[str], start: int) -> set[str]:
    """The `Failures:` list's `1) Group, sub, item` headers, as the tree's `Group.sub.item`."""
    failed: set[str] = set()
    for line in (raw.strip() for raw in lines[start:]):
        if line.startswith(_FAILURES_END):
            break
        if hit := re.match(r"\d+\)\s", line):
            failed.add(".".join(part.strip() for part in line[hit.end() :].strip().split(",")))
    return failed


def _hspec_tree_start(lines: list[str]) -> int:
    """The line after cabal's `RUNNING...`, or else the first unindented dotted line that is
    no build step (a module name heading the tree)."""
    for index, line in enumerate(lines):
        if line.startswith("Test suite ") and ": RUNNING..." in line:
            return index + 1
    heading = (
        index
        for index, line in enumerate(lines)
        if line and not line.startswith(" ") and "." in line
        if not any(step in line for step in _NOT_A_SPEC)
    )
    return next(heading, 0)


def _hspec_leaf(line: str) -> tuple[str, str]:
    """A tree line's title and the status its suffix gives (none: it passed)."""
    if hit := _LEAF_FAILED.search(line):
        return line[: hit.start()].strip(), FAILED
    if hit := _LEAF_PENDING.search(line):
        return line[: hit.start()].strip(), SKIPPED
    return line, PASSED


def _indent(line: str) -> int:
    """Leading spaces only: hspec indents with spaces, and a tab is no level."""
    return len(line) - len(line.lstrip(" "))


def parse_log_haskell_v2(log: str) -> Statuses:
    """hspec's specdoc tree (two spaces a level, no marks): a leaf is a line that the next
    tree line does not indent under, named by its groups joined with `.` so the same title
    in two groups stays two tests. Every line in the tree's span counts, summary included."""
    lines = log.splitlines()
    end = next((i for i, line in enumerate(lines) if line.strip() == "Failures:"), None)
    failed = _hspec_failures(lines, end + 1) if end is not None else set()
    tree = [
        i
        for i in range(_hspec_tree_start(lines), len(lines) if end is None else end)
        if lines[i].strip() not in ("", _HSPEC_INFO)
    ]
    results: Statuses = {}
    path: list[str] = []
    for place, index in enumerate(tree):
        following = tree[place + 1] if place + 1 < len(tree) else None
        title, status = _hspec_leaf(lines[index].strip())
        level = _indent(lines[index]) // 2
        path = [*path[:level], *[""] * (level - len(path)), title]
        if following is None or _indent(lines[following]) <= _indent(lines[index]):
            results[".".join(part for part in path if part)] = status
    results.update(dict.fromkeys(failed, FAILED))
    return results


# OCaml ---------------------------------------------------------------------------------------

_ALCOTEST_WORDS = {
    "OK": PASSED,
    "PASS": PASSED,
    "FAIL": FAILED,
    "FAILED": FAILED,
    "ERROR": ERROR,
    "ERR": ERROR,
    "SKIP": SKIPPED,
    "SKIPPED": SKIPPED,
    "TODO": SKIPPED,
}
_ALCOTEST_TAG = re.compile(r"\s*\[(?P<word>[A-Z]+)\](?P<gap>\s+)")
_ALCOTEST_INDEX = re.compile(r"\s+(?P<index>\d+)\s")


def _alcotest_name(rest: str, gap: str) -> str | None:
    """`suite index title` from what follows the `[OK]` tag and the gap before it; a line
    with no suite (the tag, two spaces, the index) is named `index title`."""
    if hit := _ALCOTEST_INDEX.search(rest):
        return f"{rest[: hit.start()]} {hit['index']} {rest[hit.end() :].strip()}"
    if len(gap) > 1 and (hit := re.match(r"(?P<index>\d+)\s", rest)):
        return f"{hit['index']} {rest[hit.end() :].strip()}"
    return None


def parse_log_ocaml(log: str) -> Statuses:
    """alcotest (and QCheck through it): the suite, the case's index and its title make the
    name, since titles repeat across suites. A tag it does not know, `[INFO]` say, reads as
    ERROR; a pass never overrides an earlier report."""
    results: Statuses = {}
    for raw in log.splitlines():
        line = raw.rstrip()
        if not (tag := _ALCOTEST_TAG.match(line)):
            continue
        if (name := _alcotest_name(line[tag.end() :], tag["gap"])) is None:
            continue
        status = _ALCOTEST_WORDS.get(tag["word"], ERROR)
        _record(results, name, status, tentative=status == PASSED)
    return results


_DUNE_RUN = re.compile(r"Running\[(?P<id>\d+)\]:\s+\((?P<command>.+)\)")
_DUNE_OUTPUT = re.compile(r"Output\[(?P<id>\d+)\]:")
_BAD_WORDS = ("FAIL", "ERROR", "EXCEPTION", "CRASH", "FATAL")


def _dune_test_name(run_id: int, command: str) -> str:
    """The basename of the program the action ends in: `(cd _build/default/test && ./t.exe)`
    is `t.exe`."""
    words = command.split("&&")[-1].strip().removeprefix("exec ").strip()
    program = words.removeprefix("./").split()
    return (program[0].rsplit("/", 1)[-1] if program else "") or f"run_{run_id}"


def _dune_output_status(line: str) -> str:
    """What one line of a test's output says of it: a failure word anywhere, then a skip word,
    else it passed (a bare `OK` or anything else: running at all is a pass)."""
    upper = line.upper()
    if any(word in upper for word in _BAD_WORDS):
        return FAILED
    return SKIPPED if "SKIP" in upper else PASSED


def parse_log_ocaml_v2(log: str) -> Statuses:
    """dune's verbose display: a test is a test binary, the lines after its `Output[n]:` up to
    the next `Running`/`Output` line are its output, and its worst line is its status."""
    results: Statuses = {}
    programs: dict[int, str] = {}
    current: str | None = None
    for line in (raw.strip() for raw in log.splitlines()):
        if not line:
            continue
        if run := _DUNE_RUN.fullmatch(line):
            run_id = int(run["id"])
            programs[run_id] = _dune_test_name(run_id, run["command"])
            current = None
        elif output := _DUNE_OUTPUT.match(line):
            current = programs.get(int(output["id"]))
        elif current:
            _keep_worst(results, current, _dune_output_status(line))
    return results


_INLINE_TOKENS = {
    **dict.fromkeys(("OK", "PASS", "PASSED", "SUCCESS"), PASSED),
    **dict.fromkeys(("SKIP", "SKIPPED", "TODO", "PENDING", "DISABLED"), SKIPPED),
    **dict.fromkeys(
        ("FAIL", "FAILED", "ERROR", "EXCEPTION", "CRASH", "FATAL", "KO", "PANIC"), FAILED
    ),
}
_INLINE_TAG = re.compile(r"\[(?P<token>[A-Za-z][A-Za-z0-9_-]*)\]\s")


def parse_log_ocaml_v3(log: str) -> Statuses:
    """`[TOKEN] name` lines (ppx_inline_test, ppx_expect and home-made runners): the name is
    the rest of the line, spaces folded; errors count as failures; worst report wins."""
    results: Statuses = {}
    for line in (raw.strip() for raw in log.splitlines()):
        tag = _INLINE_TAG.match(line)
        if tag and (status := _INLINE_TOKENS.get(tag["token"].upper())):
            _keep_worst(results, " ".join(line[tag.end() :].split()), status)
    return results


_STATUS_FIRST = re.compile(r"(?P<status>PASSED|FAILED|SKIPPED|ERROR)\s")
_DETAIL = re.compile(r"\s\s.*")
"""From the first double space on: the detail after a status line's name."""


def parse_log_ocaml_v4(log: str) -> Statuses:
    """Lines that open with a status word, as ocamlbuild-driven suites print them: the name
    runs up to the first double space (what follows is detail); a colour code counts as a
    space, so `PASSED` in colour still opens the line; worst report wins."""
    results: Statuses = {}
    for raw in log.splitlines():
        line = strip_ansi(_COLOUR.sub(" ", raw)).strip()
        if hit := _STATUS_FIRST.match(line):
            name = _DETAIL.sub("", line[hit.end() :].strip(), count=1).strip()
            _keep_worst(results, name, hit["status"])
    return results


# Elixir --------------------------------------------------------------------------------------

_EXUNIT_TRACE = re.compile(r"\*\s+test(?P<gap>\s+)(?P<rest>.*)")
_EXUNIT_TRACE_TAIL = re.compile(
    r"(?P<name>.*?)(?:\s+\((?P<note>skipped|[0-9]+(?:\.[0-9]+)?ms)\))?\s+\[L#\d+\]"
)
_EXUNIT_FAILURE = re.compile(r"\d+\)\s+test\s+(?P<name>.*?)\s+\([^)]+\)")


def _exunit_trace(line: str) -> tuple[str, str | None] | None:
    """A `* test name (note) [L#n]` line's name and note (`skipped`, a time, or none).

    With a gap of two spaces or more after `test`, one of them may start the tail, which
    names the test "" when nothing else would fit, as the publisher's does."""
    if not (head := _EXUNIT_TRACE.fullmatch(line)):
        return None
    tail = (" " if len(head["gap"]) > 1 else "") + head["rest"]
    if not (hit := _EXUNIT_TRACE_TAIL.fullmatch(tail)):
        return None
    return hit["name"].strip(), hit["note"]


def _exunit_reports(log: str) -> Iterator[tuple[str, str, bool]]:
    """(name, status, whether an earlier report wins) for each report line of the log."""
    for line in (raw.strip() for raw in log.splitlines()):
        if hit := _EXUNIT_FAILURE.fullmatch(line):
            yield hit["name"], FAILED, False
        elif trace := _exunit_trace(line):
            name, note = trace
            yield (name, SKIPPED, False) if note == "skipped" else (name, PASSED, True)


def parse_log_elixir(log: str) -> Statuses:
    """ExUnit's `--trace` lines: `* test name (1.2ms) [L#12]` is a pass unless the numbered
    failure list names it (`1) test name (MyApp.Test)`, module dropped); `(skipped)` skips.
    Coloured lines are not read (mix prints no colour without a terminal)."""
    results: Statuses = {}
    for report in _exunit_reports(log):
        _record(results, *report)
    return results


PARSERS: dict[str, Parser] = {
    "parse_log_haskell": parse_log_haskell,
    "parse_log_haskell_v2": parse_log_haskell_v2,
    "parse_log_ocaml": parse_log_ocaml,
    "parse_log_ocaml_v2": parse_log_ocaml_v2,
    "parse_log_ocaml_v3": parse_log_ocaml_v3,
    "parse_log_ocaml_v4": parse_log_ocaml_v4,
    "parse_log_ocaml_v5": parse_log_ocaml_v4,
    "parse_log_elixir": parse_log_elixir,
}
