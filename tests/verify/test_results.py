"""Reading verifier results: real pytest, JUnit, TAP and CTRF outputs, scoring, diagnostics.

The fixtures are what real tools printed (see fixtures/README.md); one test runs pytest live.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sprout.verify import (
    FORMATS,
    Diagnostics,
    MissingResults,
    ResultsError,
    TestResult,
    diagnose,
    parse_ctrf,
    parse_junit_xml,
    parse_pytest_summary,
    parse_tap,
    read_results,
    read_reward,
    score,
)

FIXTURES = Path(__file__).parent / "fixtures"
CALC = "tests/test_calc.py::"
LOGS = "/logs/verifier/"

# What the sample suite (fixtures/src/calc_suite.py) does, by pytest node id.
CALC_OUTCOMES = {
    CALC + "test_add": "passed",
    CALC + "test_subtract": "failed",
    CALC + "test_query": "error",
    CALC + "test_teardown": "error",
    CALC + "test_round": "skipped",
    CALC + "test_flaky": "passed",
    CALC + "test_sum[1-1-2]": "passed",
    CALC + "test_sum[2-2-5]": "failed",
    CALC + "TestStrings::test_upper": "passed",
    CALC + "TestStrings::test_split": "failed",
}


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def data(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def outcomes(tests: list[TestResult] | tuple[TestResult, ...]) -> dict[str, str]:
    return {test.name: test.outcome for test in tests}


def by_name(tests: list[TestResult] | tuple[TestResult, ...]) -> dict[str, TestResult]:
    return {test.name: test for test in tests}


def counts(tests: list[TestResult] | tuple[TestResult, ...]) -> dict[str, int]:
    return {o: sum(t.outcome == o for t in tests) for o in ("passed", "failed", "error", "skipped")}


# --- pytest's summary ------------------------------------------------------------------------


def test_pytest_ra_names_every_outcome():
    tests = parse_pytest_summary(text("pytest_rA.log"))
    # The skip line gives a location, not a node id; everything else is named by node id.
    assert outcomes(tests) == {**CALC_OUTCOMES, "tests/test_calc.py:40": "skipped"}
    found = by_name(tests)
    assert found["tests/test_calc.py:40"].message == "needs a GPU"
    assert found[CALC + "test_round"].message == "xfail: float rounding, issue #12"
    assert found[CALC + "test_sum[2-2-5]"].message == "assert 4 == 5"
    # Passed, then errored at teardown: one test, an error, with pytest's message.
    assert found[CALC + "test_teardown"].message.startswith("RuntimeError: could not remove")


def test_pytest_without_ra_counts_the_tests_it_does_not_name():
    tests = parse_pytest_summary(text("pytest_default.log"))
    named = {t.name: t.outcome for t in tests if not t.name.startswith("<unnamed")}
    assert named == {n: o for n, o in CALC_OUTCOMES.items() if o in ("failed", "error")}
    # 4 passed + 1 xpassed, less the teardown error's pass that the log counts twice.
    assert counts(tests) == {"passed": 4, "failed": 3, "error": 2, "skipped": 2}
    assert "<unnamed passed test #4>" in outcomes(tests)


def test_pytest_quiet_log_with_no_summary_still_counts():
    tests = parse_pytest_summary(text("pytest_quiet_no_summary.log"))
    assert all(test.name.startswith("<unnamed ") for test in tests)
    assert counts(tests) == {"passed": 4, "failed": 3, "error": 2, "skipped": 2}
    assert score(tests) == (0.0, ())


def test_pytest_all_pass_and_no_tests():
    passed = parse_pytest_summary(text("pytest_all_pass.log"))
    assert outcomes(passed) == {
        CALC + "test_add": "passed",
        CALC + "TestStrings::test_upper": "passed",
    }
    assert score(passed) == (1.0, ())
    assert parse_pytest_summary(text("pytest_no_tests.log")) == []


def test_pytest_summary_edge_lines():
    log = (
        "\x1b[31m=========== short test summary info ============\x1b[0m\n"
        "FAILED t.py::test_a[x - y] - ValueError: bad - really\n"
        "SKIPPED [2] t.py:7: slow\n"
        "\x1b[31m======= 1 failed, 2 skipped, 1 warning in 0.50s (0:00:00) =======\x1b[0m\n"
        "2 passed in 0.01s\n"  # a second run in the same log, under -q -rN
    )
    tests = parse_pytest_summary(log)
    assert by_name(tests)["t.py::test_a[x - y]"].message == "ValueError: bad - really"
    assert counts(tests) == {"passed": 2, "failed": 1, "error": 0, "skipped": 2}
    assert {"t.py:7 [1 of 2]", "t.py:7 [2 of 2]"} <= set(outcomes(tests))


def test_pytest_summary_missing_is_an_error():
    with pytest.raises(ResultsError, match=r"build\.log: found neither pytest's"):
        parse_pytest_summary("make: *** [all] Error 1\n", source="build.log")


def test_real_pytest_run_reads_the_same_from_its_log_and_its_junit_xml(tmp_path):
    """Runs real pytest now, so a change in pytest's output shows up here first."""
    (tmp_path / "tests").mkdir()
    shutil.copy(FIXTURES / "src" / "calc_suite.py", tmp_path / "tests" / "test_calc.py")
    pytest_args = [
        "-p",
        "no:cacheprovider",
        "-rA",
        "--junitxml=junit.xml",
        "-o",
        "junit_family=xunit1",
        f"--basetemp={tmp_path / 'basetemp'}",  # not the suite's: no sweep of its old runs
    ]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args, "tests"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    junit = (tmp_path / "junit.xml").read_bytes()
    from_log = read_results({}, run.stdout, run.returncode, format="pytest")
    from_xml = read_results({LOGS + "junit.xml": junit}, run.stdout, run.returncode)
    assert from_log.source == "pytest-rA"
    assert from_xml.source == "junit:/logs/verifier/junit.xml"
    assert outcomes(from_xml.tests) == {**CALC_OUTCOMES, CALC + "test_gpu": "skipped"}
    assert outcomes(from_log.tests) == {**CALC_OUTCOMES, "tests/test_calc.py:40": "skipped"}
    for diagnostics in (from_log, from_xml):
        assert (diagnostics.reward, diagnostics.passed, diagnostics.failed) == (0.0, 4, 3)
        assert diagnostics.summary.startswith("4 of 9 tests passed (2 skipped); failed: ")


# --- JUnit XML -------------------------------------------------------------------------------


def test_pytest_junit_xunit2_and_xunit1():
    xunit1 = parse_junit_xml(data("pytest_junit_xunit1.xml"))
    assert outcomes(xunit1) == {**CALC_OUTCOMES, CALC + "test_gpu": "skipped"}
    xunit2 = parse_junit_xml(data("pytest_junit.xml"))
    assert [t.outcome for t in xunit2] == [t.outcome for t in xunit1]
    assert xunit2[-1].name == "tests.test_calc.TestStrings::test_split"
    failure = by_name(xunit1)[CALC + "test_subtract"].message
    # The message attribute, then the first lines of the traceback.
    assert failure.startswith("AssertionError: subtracting by adding a negative\nassert -1 == 1")
    assert "def test_subtract():" in failure
    assert by_name(xunit1)[CALC + "test_round"].message == "xfail: float rounding, issue #12"
    assert by_name(xunit1)[CALC + "test_query"].message.startswith("failed on setup with")


def test_maven_surefire_junit():
    tests = parse_junit_xml(data("surefire_junit.xml"), source="TEST-com.example.CalcTest.xml")
    calc = "com.example.CalcTest::"
    assert outcomes(tests) == {
        calc + "usesTheGpu": "skipped",
        calc + "splitsOnCommas": "failed",
        calc + "addsTwoNumbers": "passed",
        calc + "queriesTheDatabase": "error",
        calc + "subtractsByAddingANegative": "failed",
    }
    message = by_name(tests)[calc + "subtractsByAddingANegative"].message
    assert message.startswith("org.opentest4j.AssertionFailedError: subtracting by adding")
    assert message.count("\n") <= 11  # the first lines of the stack, not all of it
    assert by_name(tests)[calc + "usesTheGpu"].message == "needs a GPU"


def test_go_junit_report():
    tests = parse_junit_xml(data("go_junit.xml"))
    assert outcomes(tests) == {
        "example.com/calc::TestAdd": "passed",
        "example.com/calc::TestSubtract": "failed",
        "example.com/calc::TestSplit/commas": "passed",
        "example.com/calc::TestGPU": "skipped",
    }
    assert "add(2, -3) = -1, want 1" in tests[1].message
    assert score(tests, ["TestSplit/commas", "TestAdd"]) == (1.0, ())


@pytest.mark.parametrize(
    ("xml", "complaint"),
    [
        (data("pytest_junit.xml")[:900], "not well-formed XML"),
        (b"<report><testcase name='a'/></report>", "found <report>"),
        (b"<testsuite><testcase classname='c'/></testsuite>", "testcase #1 has no name"),
        (
            b'<!DOCTYPE t [<!ENTITY a "aaaa">]><testsuite><testcase name="&a;"/></testsuite>',
            "declares XML entities",
        ),
    ],
)
def test_malformed_junit_names_the_file(xml, complaint):
    with pytest.raises(ResultsError, match=complaint) as caught:
        parse_junit_xml(xml, source="/logs/verifier/junit.xml")
    assert str(caught.value).startswith("/logs/verifier/junit.xml: ")


# --- CTRF ------------------------------------------------------------------------------------


def test_ctrf():
    tests = parse_ctrf(data("ctrf.json"))
    base = "tests/test_outputs.py::"
    assert outcomes(tests) == {
        base + "test_server_starts": "passed",
        base + "test_port_is_8080": "passed",
        base + "test_index_page": "failed",
        base + "test_tls": "skipped",
        base + "test_shutdown": "error",  # "other": not known to have passed
    }
    failure = by_name(tests)[base + "test_index_page"].message
    assert failure.startswith("AssertionError: assert 404 == 200\ndef test_index_page():")


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ("{not json", "not valid JSON"),
        ('{"tests": []}', "results: expected an object"),
        ('{"results": {"tests": {}}}', "results.tests: expected a list"),
        ('{"results": {"tests": [{"status": "passed"}]}}', r"results.tests\[0\].name"),
        (
            '{"results": {"tests": [{"name": "a", "status": "passed"}, {"name": "b"}]}}',
            r"results.tests\[1\].status: expected one of passed, failed, skipped, pending, "
            "other; got None",
        ),
    ],
)
def test_malformed_ctrf_names_the_file_and_field(document, field):
    with pytest.raises(ResultsError, match=f"^/logs/verifier/ctrf.json: .*{field}"):
        parse_ctrf(document, source="/logs/verifier/ctrf.json")


# --- TAP -------------------------------------------------------------------------------------


def test_tap_from_perl_test_more():
    tests = parse_tap(text("tap_perl.log"))
    assert outcomes(tests) == {
        "adds two numbers": "passed",
        "subtracts by adding a negative": "failed",
        "test 3": "skipped",
        "rounds half up": "skipped",  # TODO: an expected failure
        "splits on commas": "failed",
        "test 6": "error",  # planned 1..7, but the script died after 5
        "test 7": "error",
    }
    found = by_name(tests)
    assert found["subtracts by adding a negative"].message.splitlines() == [
        "Failed test 'subtracts by adding a negative'",
        "at calc.t line 10.",
        "       got: '-1'",
        "  expected: '1'",
    ]
    assert found["test 3"].message == "no network in the sandbox"
    assert found["test 6"].message == "planned (1..7) but never reported"


def test_tap_from_prove_names_tests_by_file():
    tests = parse_tap(text("tap_prove.log"))
    assert [t.name for t in tests][:2] == [
        "calc.t::adds two numbers",
        "calc.t::subtracts by adding a negative",
    ]
    assert counts(tests) == {"passed": 1, "failed": 2, "error": 2, "skipped": 2}


def test_tap_13_from_node_with_yaml_and_subtests():
    tests = parse_tap(text("tap_node.log"))
    assert outcomes(tests) == {
        "adds two numbers": "passed",
        "subtracts by adding a negative": "failed",
        "downloads the fixtures": "skipped",
        "rounds half up": "skipped",
        "strings::upper-cases": "passed",
        "strings::splits on commas": "failed",  # the suite failed only through it
    }
    message = by_name(tests)["subtracts by adding a negative"].message
    assert message.startswith("Expected values to be strictly equal:\n\n-1 !== 1\n")
    assert "operator: 'strictEqual'" in message and "duration_ms" not in message
    assert by_name(tests)["downloads the fixtures"].message == "no network in the sandbox"
    assert score(tests, ["strings::upper-cases", "adds two numbers"]) == (1.0, ())


def test_tap_edge_cases():
    tap = (
        "TAP version 14\n"
        "1..4\n"
        "ok 1 - escaped \\# hash # TODO not done\n"  # a TODO that passes is a pass
        "ok 2\n"
        "    ok 1 - child\n"  # subtests come before their parent's line
        "    1..1\n"
        "not ok 3 - suite\n"  # a parent that failed on its own, its subtests passing
        "Bail out! database down\n"
        "1..2\n"  # a second document, plan first
        "ok 1 - b\n"
        "ok 2 - c\n"
        "ok 3 - d\n"
        "ok 1 - e\n"  # a third, killed before its plan
    )
    tests = parse_tap(tap)
    assert outcomes(tests) == {
        "escaped # hash": "passed",
        "test 2": "passed",
        "suite::child": "passed",
        "suite": "failed",
        "test 4": "error",
        "b": "passed",
        "c": "passed",
        "d": "passed",
        "<plan>": "error",
        "e": "passed",
    }
    assert (
        by_name(tests)["test 4"].message
        == "planned (1..4) but never reported; Bail out! database down"
    )
    assert parse_tap("1..0 # SKIP no display\n") == []
    two_files = "t/a.t .. \nTAP version 13\n1..1\nok 1 - x\nt/b.t ..... \n1..1\nnot ok 1 - x\n"
    assert outcomes(parse_tap(two_files)) == {"t/a.t::x": "passed", "t/b.t::x": "failed"}
    with pytest.raises(ResultsError, match=r"^make\.log: no TAP found"):
        parse_tap("ok so far\n", source="make.log")


# --- reward files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "content", "reward"),
    [
        ("reward.txt", b"1\n", 1.0),
        ("reward.txt", b" 0 ", 0.0),
        ("reward.txt", b"0.25", 0.25),
        ("/logs/verifier/reward.json", b'{"reward": 1, "tests_passed": 3}', 1.0),
        ("/logs/verifier/reward.json", b"0", 0.0),
    ],
)
def test_reward_files(source, content, reward):
    assert read_reward(content, source=source) == reward


@pytest.mark.parametrize(
    ("source", "content", "complaint"),
    [
        ("/logs/verifier/reward.txt", b"", "expected a single number"),
        ("/logs/verifier/reward.txt", b"PASSED", "got 'PASSED'"),
        ("/logs/verifier/reward.txt", b"nan", "expected a single number"),
        ("/logs/verifier/reward.txt", b"1_0", "expected a single number"),
        ("/logs/verifier/reward.txt", b"1\n0\n", "expected a single number"),
        ("/logs/verifier/reward.json", b'{"score": 1}', 'no "reward" field'),
        ("/logs/verifier/reward.json", b'{"reward": true}', "reward: expected a finite number"),
        ("/logs/verifier/reward.json", b'"1"', "expected a finite number"),
        ("/logs/verifier/reward.json", b"{", "not valid JSON"),
    ],
)
def test_bad_reward_file_names_the_file(source, content, complaint):
    with pytest.raises(ResultsError, match=complaint) as caught:
        read_reward(content, source=source)
    assert str(caught.value).startswith(source + ": ")


# --- scoring ---------------------------------------------------------------------------------


def results(**named: str) -> list[TestResult]:
    return [TestResult(name.replace("__", "::"), outcome) for name, outcome in named.items()]  # type: ignore[arg-type]


def test_score_without_a_required_list():
    assert score(results(a="passed", b="skipped")) == (1.0, ())
    assert score(results(a="passed", b="failed")) == (0.0, ())
    assert score(results(a="passed", b="error")) == (0.0, ())
    assert score([]) == (0.0, ())  # nothing collected
    assert score(results(a="skipped", b="skipped")) == (0.0, ())  # nothing ran
    assert score(results(a="passed"), []) == (1.0, ())  # an empty list is no list


def test_score_with_required_tests():
    tests = parse_junit_xml(data("pytest_junit.xml"))  # names like tests.test_calc::test_add
    assert score(tests, ["tests/test_calc.py::test_add", "test_flaky"]) == (1.0, ())
    # The unrelated failures do not count; each required name must match and pass.
    assert score(tests, ["TestStrings::test_upper", "test_calc.py::test_add"]) == (1.0, ())
    # Without brackets a name covers every parametrization: test_sum[2-2-5] failed.
    assert score(tests, ["test_sum"]) == (0.0, ())
    assert score(tests, ["test_sum[1-1-2]"]) == (1.0, ())
    assert score(tests, ["test_subtract"]) == (0.0, ())
    assert score(tests, ["test_add", "test_gpu"]) == (0.0, ())  # skipped is not passed
    missing = ["tests/test_calc.py::test_divide", "add", "calc.py::test_add"]
    assert score(tests, ["test_add", *missing]) == (0.0, tuple(missing))
    with pytest.raises(ResultsError, match="got the string 'test_add'"):
        score(tests, "test_add")


def test_score_prefers_an_exact_name():
    tests = results(a__test_x="passed", b__test_x="failed")
    assert score(tests, ["a::test_x"]) == (1.0, ())
    assert score(tests, ["test_x"]) == (0.0, ())  # matches both; one failed


# --- diagnostics -----------------------------------------------------------------------------


def test_diagnose_summary_and_counts():
    tests = parse_junit_xml(data("pytest_junit_xunit1.xml"))
    found = diagnose(tests, source="junit:/logs/verifier/junit.xml", log="pytest output\n")
    assert (found.passed, found.failed, found.errored, found.skipped) == (4, 3, 2, 2)
    assert found.summary.startswith(
        "4 of 9 tests passed (2 skipped); failed: tests/test_calc.py::test_subtract "
        "(AssertionError: subtracting by adding a negative), "
    )
    assert "; errors: tests/test_calc.py::test_query (failed on setup with" in found.summary
    assert found.log_tail == "pytest output\n"
    many = diagnose(results(**{f"t{i}": "failed" for i in range(8)}), source="tap")
    assert many.summary == "0 of 8 tests passed; failed: t0, t1, t2, t3, t4 and 3 more"
    assert diagnose([], source="pytest-rA").summary == "no tests were collected"


def test_diagnose_caps_messages_and_the_log():
    long = "E   " + "x" * 5000
    log = "".join(f"line {i}\n" for i in range(2000))
    found = diagnose([TestResult("t", "failed", long)], source="tap", log=log)
    assert len(found.tests[0].message) == 2000
    assert found.tests[0].message.endswith("[... cut, 5004 characters in all]")
    assert len(found.log_tail) <= 4000 and found.log_tail.endswith("line 1999\n")
    assert found.log_tail.startswith(f"[... the first part of {len(log)} characters is cut]\nline ")
    small = diagnose(
        [TestResult("t", "failed", long)], source="tap", log=log, message_cap=100, log_tail_cap=50
    )
    assert len(small.tests[0].message) == 100 and len(small.log_tail) <= 50


def test_timeout_means_zero_whatever_the_results():
    tests = results(a="passed")
    found = diagnose(tests, source="pytest-rA", exit_code=None)
    assert found.reward == 0.0
    assert found.summary == "the verifier timed out, so the reward is 0; 1 of 1 tests passed"
    files = {LOGS + "reward.txt": b"1"}
    assert read_results(files, "", None).reward == 0.0
    assert read_results({}, text("pytest_all_pass.log"), None).summary.startswith(
        "the verifier timed out"
    )


def test_diagnostics_round_trip_as_plain_json():
    found = read_results(
        {LOGS + "junit.xml": data("pytest_junit.xml")}, "log", 1, required=["nope"]
    )
    stored = json.loads(json.dumps(found.to_json()))
    assert Diagnostics.from_json(stored) == found
    assert stored["required_missing"] == ["nope"]
    stored["tests"][2]["outcome"] = "exploded"
    with pytest.raises(ResultsError, match=r"diagnostics.tests\[2\].outcome"):
        Diagnostics.from_json(stored)
    with pytest.raises(ResultsError, match=r"diagnostics\.passed"):
        Diagnostics.from_json({**found.to_json(), "passed": "4"})


# --- read_results ----------------------------------------------------------------------------

EVERYTHING = {
    LOGS + "ctrf.json": data("ctrf.json"),
    LOGS + "junit.xml": data("pytest_junit.xml"),
}
LOG = text("tap_node.log") + text("pytest_rA.log")


@pytest.mark.parametrize(
    ("drop", "source"),
    [
        ((), "ctrf:/logs/verifier/ctrf.json"),
        (("ctrf.json",), "junit:/logs/verifier/junit.xml"),
        (("ctrf.json", "junit.xml"), "pytest-rA"),
    ],
)
def test_auto_reads_per_test_formats_first(drop, source):
    files = {p: c for p, c in EVERYTHING.items() if not p.endswith(drop)}
    assert read_results(files, LOG, 1).source == source


def test_auto_reads_tap_from_the_log_then_the_exit_code():
    assert read_results({}, text("tap_node.log"), 1).source == "tap"
    passed = read_results({}, "all good\n", 0)
    assert (passed.reward, passed.source, passed.tests) == (1.0, "exit-code", ())
    assert (
        passed.summary
        == "reward 1 from the exit code; no per-test results; the verifier exited with 0"
    )
    assert read_results({}, "Traceback ...\n", 2).reward == 0.0


def test_a_reward_file_decides_and_the_tests_explain():
    files = {**EVERYTHING, LOGS + "reward.txt": b"1\n", LOGS + "reward.json": b'{"reward": 0}'}
    found = read_results(files, LOG, 1)
    assert found.reward == 1.0  # reward.txt first, even though tests failed
    assert found.source == "reward:/logs/verifier/reward.txt+ctrf:/logs/verifier/ctrf.json"
    assert len(found.tests) == 5
    assert "reward 1 from /logs/verifier/reward.txt" in found.summary
    only_json = read_results({LOGS + "reward.json": b'{"reward": 0}'}, "", 0)
    assert (only_json.reward, only_json.source) == (0.0, "reward:/logs/verifier/reward.json")


def test_auto_skips_an_unreadable_results_file_and_says_so():
    files = {LOGS + "junit.xml": data("pytest_junit.xml")[:500]}
    found = read_results(files, text("pytest_rA.log"), 1)
    assert found.source == "pytest-rA"
    assert (
        "ignored unreadable junit results: /logs/verifier/junit.xml: not well-formed"
        in found.summary
    )


def test_surefire_reports_are_read_together():
    files = {
        "/app/target/surefire-reports/TEST-com.example.CalcTest.xml": data("surefire_junit.xml"),
        "/app/target/surefire-reports/TEST-calc.xml": data("go_junit.xml"),
        "/app/target/surefire-reports/com.example.CalcTest.txt": b"ignored",
    }
    found = read_results(files, "", 1, format="junit")
    assert len(found.tests) == 9 and found.source.count(".xml") == 2


def test_named_formats_decide_alone():
    files = {**EVERYTHING, LOGS + "reward.txt": b"1"}
    junit = read_results(files, LOG, 0, format="junit")
    assert (junit.reward, junit.source) == (0.0, "junit:/logs/verifier/junit.xml")
    by_exit = read_results(files, LOG, 0, format="exit-code")
    assert (by_exit.reward, by_exit.source) == (1.0, "exit-code+ctrf:/logs/verifier/ctrf.json")
    assert read_results({}, LOG, 0, format="tap").source == "tap"


def test_a_named_format_missing_or_unreadable_is_no_verdict():
    """A verifier that ran to its end and left no result its task requires gave no verdict:
    MissingResults (the attempt's error, fault `verifier`), never a reward of 0."""
    with pytest.raises(MissingResults, match=r"^task t: no ctrf results: no \*ctrf\*\.json"):
        read_results({}, LOG, 0, format="ctrf", task="t")
    with pytest.raises(MissingResults, match=r"ctrf results unreadable: .*ctrf\.json: not valid"):
        read_results({LOGS + "ctrf.json": b"{"}, "", 0, format="ctrf")
    with pytest.raises(MissingResults, match="no reward file"):
        read_results(EVERYTHING, LOG, 0, format="reward")
    with pytest.raises(MissingResults, match="no junit results"):
        read_results({}, "", 1, format="junit")  # a runner that failed to start: exit 1


def test_a_verifier_that_timed_out_scores_zero_whatever_it_left():
    for format in ("ctrf", "reward"):
        timed_out = read_results({}, LOG, None, format=format)
        assert timed_out.reward == 0.0
        assert timed_out.summary.startswith("the verifier timed out, so the reward is 0")


def test_required_tests_through_read_results():
    files = {LOGS + "junit.xml": data("pytest_junit.xml")}
    ok = read_results(files, "", 1, required=["tests/test_calc.py::test_add", "test_flaky"])
    assert (ok.reward, ok.required_missing) == (1.0, ())
    assert ok.summary.endswith("; all 2 required tests passed")
    gone = read_results(files, "", 1, required=["tests/test_calc.py::test_mul"])
    assert gone.reward == 0.0 and gone.required_missing == ("tests/test_calc.py::test_mul",)
    assert "required tests missing: tests/test_calc.py::test_mul" in gone.summary


def test_bad_settings_and_reward_files_name_the_task():
    with pytest.raises(ResultsError) as caught:
        read_results({}, "", 0, format="xunit", task="hello-world")
    assert str(caught.value) == (
        f"task hello-world: results format 'xunit' is unknown; use one of {FORMATS}"
    )
    with pytest.raises(
        ResultsError, match=r"^task hello-world: /logs/verifier/reward\.txt: expected"
    ):
        read_results({LOGS + "reward.txt": b"yes"}, "", 0, task="hello-world")
