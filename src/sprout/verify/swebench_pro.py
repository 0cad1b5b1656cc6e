"""SWE-bench Pro's verdict on the output.json its instance's parser.py wrote.

The publisher's harness runs each instance's own parser over the run script's stdout and
stderr; the parser writes `{"tests": [{"name": ..., "status": ...}]}`, and the instance is
resolved exactly when every FAIL_TO_PASS and PASS_TO_PASS name is among the names reported
`PASSED`: a set inclusion, so a name reported twice passes when any entry says PASSED, a
name not reported fails, and any other status (FAILED, ERROR, SKIPPED, one the parser
made up) fails. sprout's reward is that verdict; the diagnostics show each required test.
An output.json that is missing or not of that shape is no verdict (the harness would have
thrown; `results.read_results` makes it `MissingResults`), never the attempt failing.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sprout.verify.types import Outcome, ResultsError, TestResult

OUTPUT_JSON = "output.json"
PASSED = "PASSED"
OUTCOMES: dict[str, Outcome] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
}
"""The parsers' statuses as sprout's outcomes; any other status is a failure."""


@dataclass(frozen=True)
class ProVerdict:
    """The harness's verdict, and what the diagnostics show of it."""

    reward: float
    tests: tuple[TestResult, ...]
    """One per required test; one output.json does not report is failed."""
    missing: tuple[str, ...]
    """The required tests output.json does not report."""
    notes: tuple[str, ...]


def read_output(files: Mapping[str, bytes]) -> tuple[str, list[tuple[str, str]]]:
    """The path of the parser's output.json among the verifier's files, and the (name,
    status) of each test it reports; ResultsError naming the file when there is none or it
    is not `{"tests": [{"name": ..., "status": ...}, ...]}`."""
    paths = sorted(path for path in files if posixpath.basename(path) == OUTPUT_JSON)
    if not paths:
        raise ResultsError(f"no {OUTPUT_JSON} among the verifier's files (the parser wrote none)")
    source = paths[0]
    try:
        content = json.loads(files[source].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ResultsError(f"{source}: not JSON ({error})") from None
    tests = content.get("tests") if isinstance(content, dict) else None
    if not isinstance(tests, list):
        raise ResultsError(f'{source}: expected {{"tests": [...]}}, got {_short(content)}')
    entries = []
    for index, entry in enumerate(tests):
        name = entry.get("name") if isinstance(entry, dict) else None
        status = entry.get("status") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or not isinstance(status, str):
            raise ResultsError(
                f'{source}: tests[{index}]: expected {{"name": ..., "status": ...}}, '
                f"got {_short(entry)}"
            )
        entries.append((name, status))
    return source, entries


def _short(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def judge(entries: Sequence[tuple[str, str]], required: Sequence[str]) -> ProVerdict:
    """The harness's verdict on `entries` for the FAIL_TO_PASS and PASS_TO_PASS names."""
    passed = {name for name, status in entries if status == PASSED}
    statuses: dict[str, str] = {}
    for name, status in entries:
        if statuses.get(name) != PASSED:
            statuses[name] = status
    tests = []
    for name in dict.fromkeys(required):
        reported = statuses.get(name)
        outcome: Outcome = "failed" if reported is None else OUTCOMES.get(reported, "failed")
        why = "" if outcome == "passed" else reported or f"not in {OUTPUT_JSON}"
        tests.append(TestResult(name, outcome, why))
    missing = tuple(name for name in dict.fromkeys(required) if name not in statuses)
    resolved = set(required) <= passed
    notes = [f"graded as SWE-bench Pro's harness grades its {len(entries)} tests in {OUTPUT_JSON}"]
    if resolved:
        notes.append(f"all {len(tests)} FAIL_TO_PASS and PASS_TO_PASS tests PASSED")
    return ProVerdict(1.0 if resolved else 0.0, tuple(tests), missing, tuple(notes))
