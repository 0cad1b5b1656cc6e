"""SWE-bench Pro's verdict on output.json, as the publisher's harness decides it: resolved
exactly when every FAIL_TO_PASS and PASS_TO_PASS name is reported PASSED; an output.json
that is missing or not of the parser's shape is no verdict, never a failure."""

from __future__ import annotations

import json

import pytest

from sprout.verify import MissingResults, read_results

REQUIRED = ["TestAdd", "TestMul", "TestZero"]
OUTPUT = "/logs/verifier/output.json"


def graded(tests: list[dict[str, str]], exit_code: int | None = 0, **kwargs: object):
    files = {OUTPUT: json.dumps({"tests": tests}).encode()}
    return read_results(files, "log", exit_code, format="swebench-pro", required=REQUIRED, **kwargs)


def reported(*statuses: str) -> list[dict[str, str]]:
    return [{"name": n, "status": s} for n, s in zip(REQUIRED, statuses, strict=True)]


def test_every_required_test_passed_resolves() -> None:
    extra = [{"name": "TestOther", "status": "FAILED"}]  # not required: not graded
    found = graded(reported("PASSED", "PASSED", "PASSED") + extra)
    assert found.reward == 1.0 and found.passed == 3 and found.failed == 0
    assert found.source == f"swebench-pro:{OUTPUT}"
    assert found.summary.startswith("3 of 3 tests passed; ")
    assert "all 3 FAIL_TO_PASS and PASS_TO_PASS tests PASSED" in found.summary


def test_one_required_test_not_passed_is_not_resolved() -> None:
    for status in ("FAILED", "ERROR", "SKIPPED", "XFAIL"):
        found = graded(reported("PASSED", status, "PASSED"))
        assert found.reward == 0.0, status
    found = graded(reported("PASSED", "FAILED", "PASSED"))
    assert found.summary.startswith("2 of 3 tests passed; failed: TestMul (FAILED)")


def test_a_test_the_parser_did_not_report_fails() -> None:
    found = graded(reported("PASSED", "PASSED", "PASSED")[:2])
    assert found.reward == 0.0 and found.required_missing == ("TestZero",)
    assert "failed: TestZero (not in output.json)" in found.summary


def test_a_name_reported_twice_passes_when_either_entry_says_passed() -> None:
    """The harness takes the set of names reported PASSED."""
    twice = [{"name": "TestMul", "status": "FAILED"}, *reported("PASSED", "PASSED", "PASSED")]
    assert graded(twice).reward == 1.0
    assert graded([*reported("PASSED", "PASSED", "PASSED"), twice[0]]).reward == 1.0


def test_no_output_json_or_one_of_another_shape_is_no_verdict() -> None:
    cases = {
        b"": "not JSON",
        b'{"results": []}': 'expected {"tests": [...]}',
        b'{"tests": [{"name": "TestAdd"}]}': 'tests[0]: expected {"name": ..., "status": ...}',
    }
    for content, problem in cases.items():
        with pytest.raises(MissingResults, match=r"^task t: /logs/verifier/output.json: "):
            read_results({OUTPUT: content}, "", 0, format="swebench-pro", task="t")
        with pytest.raises(MissingResults) as raised:
            read_results({OUTPUT: content}, "", 0, format="swebench-pro")
        assert problem in str(raised.value)
    with pytest.raises(MissingResults, match=r"no output\.json among the verifier's files"):
        read_results({}, "Traceback ...", 1, format="swebench-pro", required=REQUIRED)


def test_a_verifier_that_timed_out_scores_0() -> None:
    found = read_results({}, "", None, format="swebench-pro", required=REQUIRED)
    assert found.reward == 0.0 and "timed out" in found.summary
    assert graded(reported("PASSED", "PASSED", "PASSED"), exit_code=None).reward == 0.0
