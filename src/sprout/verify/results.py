"""From what a verifier run left behind to a reward and diagnostics.

`read_results` picks the results format, `score` applies the reward rule, and `diagnose`
packs the evidence (capped) with a one-line summary for people and the analyst.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from sprout.verify.parsers import (
    decode,
    has_pytest_summary,
    parse_ctrf,
    parse_junit_xml,
    parse_pytest_summary,
    read_reward,
)
from sprout.verify.swebench_pro import judge, read_output
from sprout.verify.tap import has_tap, parse_tap
from sprout.verify.text import cap, tail
from sprout.verify.types import (
    Diagnostics,
    MissingResults,
    Provenance,
    ResultsError,
    TestResult,
)

FORMATS = ("auto", "reward", "ctrf", "junit", "pytest", "tap", "exit-code", "swebench-pro")
"""The values a task's results format may take; "auto" tries them in the order below."""
PER_TEST_FORMATS = ("ctrf", "junit", "pytest", "tap")
"""Formats that name tests, in the order "auto" tries them: files first, then the log."""
REWARD_FILES = ("reward.txt", "reward.json")
MESSAGE_CAP = 2000
LOG_TAIL_CAP = 4000
_LISTED = 5  # failing tests named in a summary


def score(
    tests: Sequence[TestResult], required: Sequence[str] | None = None
) -> tuple[float, tuple[str, ...]]:
    """The binary reward for these results, and the required tests that none of them matched.

    With required names: 1.0 only if each one matches at least one result and every result it
    matches passed. A name matches a test with exactly that name or, failing that, one whose
    id ends with it, comparing whole parts: "test_b", "TestA::test_b" and "t.py::TestA::test_b"
    all match "tests/t.py::TestA::test_b" (and JUnit's "tests.t.TestA::test_b"); a name
    without "[...]" also matches every parametrization. With no names (None or empty): 1.0
    only if at least one test passed and none failed or errored; skips count neither way.
    """
    if required is not None and isinstance(required, str):
        raise ResultsError(f"required: expected a list of test names, got the string {required!r}")
    if not required:
        outcomes = {test.outcome for test in tests}
        passed = "passed" in outcomes and not outcomes & {"failed", "error"}
        return (1.0 if passed else 0.0), ()
    parts = [(_parts(test.name), _parts(_unparametrized(test.name)), test) for test in tests]
    missing: list[str] = []
    reward = 1.0
    for name in required:
        matched = [test for test in tests if test.name == name]
        if not matched:
            want = _parts(name)
            matched = [
                test
                for full, bare, test in parts
                if _ends_with(full, want) or ("[" not in want[-1] and _ends_with(bare, want))
            ]
        if not matched:
            missing.append(name)
            reward = 0.0
        elif any(test.outcome != "passed" for test in matched):
            reward = 0.0
    return reward, tuple(missing)


def _parts(name: str) -> tuple[str, ...]:
    """ "tests/t.py::A::b" and "tests.t.A::b" both as ("tests", "t", "A", "b")."""
    *scopes, last = name.split("::")
    out: list[str] = []
    for scope in scopes:
        scope = scope.removeprefix("./").removesuffix(".py")
        out.extend(part for part in re.split(r"[/.]", scope) if part)
    return (*out, last)


def _unparametrized(name: str) -> str:
    return re.sub(r"\[.*\]$", "", name)


def _ends_with(parts: tuple[str, ...], suffix: tuple[str, ...]) -> bool:
    return len(suffix) <= len(parts) and parts[len(parts) - len(suffix) :] == suffix


def diagnose(
    tests: Sequence[TestResult],
    *,
    source: Provenance | str,
    log: str = "",
    exit_code: int | None = 0,
    required: Sequence[str] | None = None,
    reward: float | None = None,
    notes: Sequence[str] = (),
    message_cap: int = MESSAGE_CAP,
    log_tail_cap: int = LOG_TAIL_CAP,
) -> Diagnostics:
    """Diagnostics for one verifier run.

    The reward is `reward` when a reward file or the exit code decided it, otherwise
    `score(tests, required)`; an `exit_code` of None means the verifier timed out, which makes
    it 0 whatever the results say. Each message is cut to `message_cap` characters and the log
    to its last `log_tail_cap`. `notes` (ignored files and the like) end the summary.
    `source` says where the reward came from (a `Provenance`, or the string it is stored as).
    """
    provenance = source if isinstance(source, Provenance) else Provenance.from_json(source)
    if message_cap < 1 or log_tail_cap < 1:
        raise ResultsError(f"caps must be positive, got {message_cap=} and {log_tail_cap=}")
    scored, missing = score(tests, required)
    decided = scored if reward is None else reward
    if exit_code is None:
        decided = 0.0
    kept = tuple(
        test
        if len(test.message) <= message_cap
        else TestResult(test.name, test.outcome, cap(test.message, message_cap))
        for test in tests
    )
    counts = {outcome: sum(t.outcome == outcome for t in tests) for outcome in _OUTCOME_ORDER}
    summary = _summary(
        tests,
        counts,
        exit_code=exit_code,
        reward=reward,
        required=required,
        all_required=bool(required) and scored == 1.0,
        missing=missing,
        provenance=provenance,
        notes=notes,
    )
    return Diagnostics(
        reward=float(decided),
        tests=kept,
        passed=counts["passed"],
        failed=counts["failed"],
        errored=counts["error"],
        skipped=counts["skipped"],
        required_missing=missing,
        source=provenance.to_json(),
        log_tail=tail(decode(log), log_tail_cap),
        summary=summary,
    )


def _summary(
    tests: Sequence[TestResult],
    counts: Mapping[str, int],
    *,
    exit_code: int | None,
    reward: float | None,
    required: Sequence[str] | None,
    all_required: bool,
    missing: Sequence[str],
    provenance: Provenance,
    notes: Sequence[str],
) -> str:
    """`Diagnostics.summary`: the counts, the failures, the required tests, what decided
    the reward, then `notes`, joined by "; "."""
    parts = ["the verifier timed out, so the reward is 0"] if exit_code is None else []
    ran = counts["passed"] + counts["failed"] + counts["error"]
    if tests:
        line = f"{counts['passed']} of {ran} tests passed"
        parts.append(line + (f" ({counts['skipped']} skipped)" if counts["skipped"] else ""))
        parts.extend(_failures(tests, "failed", "failed"))
        parts.extend(_failures(tests, "error", "errors"))
    elif reward is None:
        parts.append("no tests were collected")
    if required and all_required:
        parts.append(f"all {len(required)} required tests passed")
    if missing:
        shown = ", ".join(missing[:10]) + (
            f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        )
        parts.append(f"required tests missing: {shown}")
    decider = {"exit-code": "the exit code", "reward": ",".join(provenance.files)}
    label = decider.get(provenance.kind)  # "" for a reward file that was missing
    if reward is not None and exit_code is not None and label:
        parts.append(f"reward {reward:g} from {label}")
    parts.extend(cap(note, 300) for note in notes)
    return "; ".join(parts)


_OUTCOME_ORDER = ("passed", "failed", "error", "skipped")


def _failures(tests: Sequence[TestResult], outcome: str, label: str) -> list[str]:
    bad = [test for test in tests if test.outcome == outcome]
    if not bad:
        return []
    shown = []
    for test in bad[:_LISTED]:
        first = next((line.strip() for line in test.message.splitlines() if line.strip()), "")
        first = first if len(first) <= 100 else first[:97] + "..."
        shown.append(f"{test.name} ({first})" if first else test.name)
    more = f" and {len(bad) - _LISTED} more" if len(bad) > _LISTED else ""
    return [f"{label}: {', '.join(shown)}{more}"]


def read_results(
    files: Mapping[str, bytes],
    log: str,
    exit_code: int | None,
    *,
    format: str = "auto",
    required: Sequence[str] | None = None,
    task: str | None = None,
) -> Diagnostics:
    """Reward and diagnostics from the files a verifier run left and its log.

    `files` maps paths (such as "/logs/verifier/junit.xml") to contents; `exit_code` is None
    when the verifier timed out. `format` is one of FORMATS. "auto" reads the first per-test
    format present (CTRF "*ctrf*.json", JUnit "*.xml", pytest's summary in the log, TAP in the
    log); then a reward file (reward.txt, reward.json), if any, decides the reward and the
    tests are diagnostics only; with neither, the exit code does (1 iff 0). A per-test file
    that cannot be read is skipped with a note in the summary.

    A named format alone decides: its results (a reward file for "reward") missing or
    unreadable after a verifier that ran to its end are no verdict (`MissingResults`);
    "reward" and "exit-code" still show whatever per-test results exist. A verifier that
    timed out scores 0. Raises ResultsError for an unknown format and for a reward file
    that holds no number (a broken task, not a failed attempt), naming the task and file.
    """
    where = f"task {task}: " if task else ""
    if format not in FORMATS:
        raise ResultsError(f"{where}results format {format!r} is unknown; use one of {FORMATS}")
    readers = _readers(files, log)
    run = _Run(log, exit_code, required)
    if format in PER_TEST_FORMATS:
        return _named_per_test(run, readers, format, where)
    if format == "swebench-pro":
        return _swebench_pro(run, files, where)
    tests, test_source, notes = _first_per_test(readers)
    reward_path = _reward_file(files)
    if format in ("auto", "reward") and reward_path:
        try:
            reward = read_reward(files[reward_path], source=reward_path)
        except ResultsError as error:
            raise ResultsError(f"{where}{error}") from None
        source = Provenance("reward", (reward_path,), tests=test_source)
        return run.diagnostics(tests, source, reward=reward, notes=notes)
    if format == "reward":
        missing = f"no reward file ({' or '.join(REWARD_FILES)}) among the verifier's files"
        if exit_code is not None:
            raise MissingResults(f"{where}{missing}")
        return run.diagnostics(tests, Provenance("reward"), reward=0.0, notes=[missing, *notes])
    if format == "auto" and test_source is not None:
        return run.diagnostics(tests, test_source, notes=notes)
    if exit_code is not None:
        notes.insert(0, f"the verifier exited with {exit_code}")
    if not tests:
        notes.insert(0, "no per-test results")
    source = Provenance("exit-code", tests=test_source)
    return run.diagnostics(tests, source, reward=1.0 if exit_code == 0 else 0.0, notes=notes)


@dataclass(frozen=True)
class _Run:
    """What a verifier run left besides its files, which every way of reading it shares: its
    log, its exit code, and the tests the task requires."""

    log: str
    exit_code: int | None
    required: Sequence[str] | None

    def diagnostics(
        self,
        tests: Sequence[TestResult],
        source: Provenance,
        reward: float | None = None,
        notes: Sequence[str] = (),
    ) -> Diagnostics:
        """`diagnose` for this run; with required tests, says why pytest's bare counts
        cannot match their names."""
        if self.required and "pytest-counts" in source.kinds:
            unnamed = "pytest ran without -rA, so its passing tests have no names to match"
            notes = [*notes, unnamed]
        return diagnose(
            tests,
            source=source,
            log=self.log,
            exit_code=self.exit_code,
            required=self.required,
            reward=reward,
            notes=notes,
        )


def _named_per_test(
    run: _Run, readers: Mapping[str, Callable[[], _Found]], format: str, where: str
) -> Diagnostics:
    """The diagnostics of a task that names its per-test `format`: that format alone decides,
    so results that are missing or unreadable are no verdict (`MissingResults`), unless the
    verifier timed out, which scores 0 and says why."""
    try:
        found = readers[format]()
    except ResultsError as error:
        problem = f"{format} results unreadable: {error}"
    else:
        if found is not None:
            return run.diagnostics(*found)
        problem = f"no {format} results: {_WHERE[format]}"
    if run.exit_code is not None:
        raise MissingResults(f"{where}{problem}")
    return run.diagnostics([], Provenance(format), reward=0.0, notes=[problem])


def _swebench_pro(run: _Run, files: Mapping[str, bytes], where: str) -> Diagnostics:
    """SWE-bench Pro's verdict on its parser's output.json (`verify.swebench_pro`): one that
    is missing or unreadable is no verdict (`MissingResults`), unless the verifier timed out."""
    try:
        path, entries = read_output(files)
    except ResultsError as error:
        if run.exit_code is not None:
            raise MissingResults(f"{where}{error}") from None
        return run.diagnostics([], Provenance("swebench-pro"), reward=0.0, notes=[str(error)])
    verdict = judge(entries, run.required or ())
    source = Provenance("swebench-pro", (path,))
    found = diagnose(
        verdict.tests, source=source, log=run.log, exit_code=run.exit_code,
        reward=verdict.reward, notes=verdict.notes,
    )  # fmt: skip
    return replace(found, required_missing=verdict.missing)


def _first_per_test(
    readers: Mapping[str, Callable[[], _Found]],
) -> tuple[list[TestResult], Provenance | None, list[str]]:
    """The results of the first per-test format present (in PER_TEST_FORMATS' order), with
    notes naming those that were there but unreadable."""
    notes: list[str] = []
    for name in PER_TEST_FORMATS:
        try:
            found = readers[name]()
        except ResultsError as error:
            notes.append(f"ignored unreadable {name} results: {error}")
            continue
        if found is not None:
            tests, source = found
            return tests, source, notes
    return [], None, notes


_WHERE = {
    "ctrf": "no *ctrf*.json file among the verifier's files",
    "junit": "no *.xml file among the verifier's files",
    "pytest": "the log has no pytest summary (run pytest with -rA)",
    "tap": "the log has no TAP (no 'TAP version' or '1..N' plan line)",
}

_Found = tuple[list[TestResult], Provenance] | None


def _readers(files: Mapping[str, bytes], log: str) -> dict[str, Callable[[], _Found]]:
    def from_files(kind: str, parse: Callable[..., list[TestResult]], match: str) -> _Found:
        paths = sorted(path for path in files if re.search(match, posixpath.basename(path), re.I))
        if not paths:
            return None
        tests = [test for path in paths for test in parse(files[path], source=path)]
        return tests, Provenance(kind, tuple(paths))

    def pytest() -> _Found:
        if not has_pytest_summary(log):
            return None
        tests = parse_pytest_summary(log, source="the verifier's log")
        named = not any(test.name.startswith("<unnamed ") for test in tests)
        return tests, Provenance("pytest-rA" if named else "pytest-counts")

    return {
        "ctrf": lambda: from_files("ctrf", parse_ctrf, r"ctrf.*\.json$"),
        "junit": lambda: from_files("junit", parse_junit_xml, r"\.xml$"),
        "pytest": pytest,
        "tap": lambda: (
            (parse_tap(log, source="the verifier's log"), Provenance("tap"))
            if has_tap(log)
            else None
        ),
    }


def _reward_file(files: Mapping[str, bytes]) -> str | None:
    for name in REWARD_FILES:
        paths = sorted(path for path in files if posixpath.basename(path) == name)
        if paths:
            return paths[0]
    return None
