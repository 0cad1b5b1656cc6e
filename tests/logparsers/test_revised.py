"""The publisher's revisions of shared parser names, on logs their runners print where the
publisher's reading differs from the `swebench` package's: each map below is the publisher's."""

from __future__ import annotations

import pytest

from sprout.logparsers import revised

PYTEST_RA = """\
============================= test session starts ==============================
platform linux -- Python 3.11.9, pytest-8.2.0, pluggy-1.5.0
rootdir: /testbed
collected 8 items

tests/test_api.py ..F.sx                                                 [ 75%]
tests/test_cli.py .E                                                     [100%]

=================================== FAILURES ===================================
_____________________________ test_divide[a - b] _______________________________
E   assert 1 == 2
==================================== PASSES ====================================
=========================== short test summary info ============================
PASSED tests/test_api.py::test_add
PASSED tests/test_api.py::test_load[/testbed/data/input.csv]
PASSED tests/test_api.py::test_load[//server/share]
PASSED tests/test_api.py::test_glob[/testbed/*.py]
PASSED tests/test_cli.py::test_run
SKIPPED [1] tests/test_api.py:40: needs network
XFAIL tests/test_api.py::test_flaky - known bug
FAILED tests/test_api.py::test_divide - assert 1 == 2
ERROR tests/test_cli.py::test_config - RuntimeError: boom
=========== 1 failed, 5 passed, 1 skipped, 1 xfailed, 1 error in 0.52s =========
"""


def test_pytest_reads_the_skip_summary_count_as_a_test_and_not_xfail():
    assert revised.parse_log_pytest(PYTEST_RA) == {
        "tests/test_api.py::test_add": "PASSED",
        "tests/test_api.py::test_load[/testbed/data/input.csv]": "PASSED",
        "tests/test_api.py::test_load[//server/share]": "PASSED",
        "tests/test_api.py::test_glob[/testbed/*.py]": "PASSED",
        "tests/test_cli.py::test_run": "PASSED",
        "[1]": "SKIPPED",
        "tests/test_api.py::test_divide": "FAILED",
        "tests/test_cli.py::test_config": "ERROR",
    }


def test_pytest_options_cuts_absolute_path_parameters_to_their_last_part():
    statuses = revised.parse_log_pytest_options(PYTEST_RA)
    assert statuses == {
        "tests/test_api.py::test_add": "PASSED",
        "tests/test_api.py::test_load[/input.csv]": "PASSED",
        "tests/test_api.py::test_load[//server/share]": "PASSED",
        "tests/test_api.py::test_glob[/testbed/*.py]": "PASSED",
        "tests/test_cli.py::test_run": "PASSED",
        "[1]": "SKIPPED",
        "tests/test_api.py::test_divide": "FAILED",
        "tests/test_cli.py::test_config": "ERROR",
    }


def test_pytest_options_keeps_a_name_without_a_closed_parameter():
    assert revised.parse_log_pytest_options("PASSED t.py::test_x[a\nPASSED t.py::y[a]b") == {
        "t.py::test_x[a": "PASSED",
        "t.py::y[a]": "PASSED",
    }


PYTEST_COLOURED = """\
tests/test_api.py::test_add PASSED
tests/test_api.py::test_words[hello world] PASSED
the deploy step FAILED
\x1b[32mPASSED\x1b[0m tests/test_api.py::test_colour
\x1b[32mPASSED\x1b[0m tests/test_api.py::test_words[hello world]
\x1b[31mERROR\x1b[0m tests/test_cli.py::test_config - RuntimeError: boom
\x1b[1;31mFAILED\x1b[0m tests/test_cli.py::test_bold
"""


def test_pytest_v2_names_a_test_by_one_word_either_side_of_its_status():
    assert revised.parse_log_pytest_v2(PYTEST_COLOURED) == {
        "tests/test_api.py::test_add": "PASSED",
        "tests/test_api.py::test_words[hello": "PASSED",
        "the": "deploy",
        "tests/test_api.py::test_colour": "PASSED",
        "tests/test_cli.py::test_config": "ERROR",
    }


@pytest.mark.parametrize("line", ["PASSED", "  FAILED", "PASSED\ttests/test_api.py::test_add"])
def test_pytest_v2_fails_where_a_status_has_no_test_beside_it(line):
    with pytest.raises(ValueError, match="no test beside it"):
        revised.parse_log_pytest_v2(f"PASSED tests/test_api.py::test_add\n{line}\n")


PHPUNIT_TESTDOX = """\
PHPUnit 10.5.20 by Sebastian Bergmann and contributors.

Runtime:       PHP 8.3.16

Money (Tests\\Unit\\Money)
 ✔ Formats amounts [1.34 ms]
 ✘ Rounds halves [0.20 ms]
   │
   │ Failed asserting that 2 is identical to 3.
 ↩ Converts currencies
 ✘ Rounds halves [0.31 ms]
 ✔ Rounds halves [0.20 ms]

Time: 00:00.031, Memory: 8.00 MB
"""


def test_phpunit_keys_a_test_without_its_duration_so_its_last_run_stands():
    assert revised.parse_log_phpunit(PHPUNIT_TESTDOX) == {
        "Money > Formats amounts": "PASSED",
        "Money > Rounds halves": "PASSED",
        "Money > Converts currencies": "SKIPPED",
    }


def test_phpunit_names_a_test_before_any_suite_under_none_less_one_duration():
    """The evaluation takes the second duration off afterwards, as it does every name's."""
    assert revised.parse_log_phpunit(" ✔ Boots [2 ms] [1 ms]") == {"None > Boots [2 ms]": "PASSED"}


MAVEN_STDOUT_THEN_TRACE = """\
[INFO] Scanning for projects...
[INFO] Running com.example.FooTest
[INFO] Tests run: 1, Failures: 0, Errors: 0, Skipped: 0
[INFO] BUILD SUCCESS
[INFO] Running com.example.BarTest
[ERROR] Tests run: 1, Failures: 1, Errors: 0, Skipped: 0
[INFO] BUILD FAILURE
+ mvn -q test -Dtest=com.example.FooTest#testA -DfailIfNoTests=false
+ mvn -q test -Dtest=com.example.BarTest#testB -DfailIfNoTests=false
"""

MAVEN_TRACED_IN_ORDER = """\
+ mvn test -Dtest=com.example.FooTest#testA
+ mvn test -Dtest=com.example.BarTest#testB
[INFO] BUILD SUCCESS
[INFO] BUILD FAILURE
+ mvn test -Dtest=FooTest -Dtest=BazTest#testC
[INFO] BUILD SUCCESS
"""


def test_maven_gives_results_read_before_any_command_to_a_placeholder():
    assert revised.parse_log_maven(MAVEN_STDOUT_THEN_TRACE) == {
        "---NO TEST NAME FOUND YET---": "FAILED"
    }


def test_maven_gives_each_result_to_the_last_command_read():
    assert revised.parse_log_maven(MAVEN_TRACED_IN_ORDER) == {
        "com.example.BarTest#testB": "FAILED",
        "BazTest#testC": "PASSED",
    }


GRADLE = """\
> Task :compileJava
> Task :test

com.example.FooTest > testAdd PASSED
com.example.FooTest > testSub FAILED (0.5s)
com.example.FooTest > testMul   PASSED (12s)
com.example.BarTest > testSlow
    WARNING: An illegal reflective access operation has occurred
PASSED
> Task :check PASSED

BUILD SUCCESSFUL in 14s
"""


def test_gradle_reads_timed_results_and_not_a_status_on_its_own_line():
    assert revised.parse_log_gradle_custom(GRADLE) == {
        "com.example.FooTest > testAdd": "PASSED",
        "com.example.FooTest > testSub": "FAILED",
        "com.example.FooTest > testMul": "PASSED",
    }


JEST_FILES = """\
PASS src/layout.test.js (5.2 s)
PASS src/text.test.js (12.34ms)
FAIL src/image.test.js (1.2s)
PASS src/svg.test.js (0.5 s) ● 1 snapshot written
FAIL src/font.test.js
PASSED is not jest's
"""


def test_react_pdf_takes_a_duration_off_only_at_the_end_of_the_line():
    assert revised.parse_log_react_pdf(JEST_FILES) == {
        "src/layout.test.js": "PASSED",
        "src/text.test.js": "PASSED",
        "src/image.test.js": "FAILED",
        "src/svg.test.js (0.5 s) ● 1 snapshot written": "PASSED",
        "src/font.test.js": "FAILED",
    }


JEST_VERBOSE = """\
 PASS  src/__tests__/widgets.test.js
  Button
    ✓ renders (3 ms)
  Dialog
    ✕ renders  (12 ms)
    ○ skipped opens
  Menu
    ✓ renders
    ✓  (5 ms)
"""


def test_jest_keeps_the_whitespace_around_a_title():
    assert revised.parse_log_jest(JEST_VERBOSE) == {
        "renders": "PASSED",
        "renders ": "FAILED",
        "skipped opens": "SKIPPED",
        " (5 ms)": "PASSED",
    }


def test_exports_the_revised_names():
    assert sorted(revised.PARSERS) == [
        "parse_log_gradle_custom",
        "parse_log_jest",
        "parse_log_maven",
        "parse_log_phpunit",
        "parse_log_pytest",
        "parse_log_pytest_options",
        "parse_log_pytest_pydantic",
        "parse_log_pytest_v2",
        "parse_log_react_pdf",
    ]


def test_pydantic_verbose_failures_drop_their_progress() -> None:
    """SWE-Gym's pydantic parser: `FAILED [ 50%]` after a verbose test id reads as FAILED."""
    from sprout.logparsers import find

    log = (
        "tests/test_main.py::test_a PASSED                              [ 25%]\n"
        "tests/test_main.py::test_b FAILED [ 50%]\n"
        "\x1b[31mFAILED\x1b[0m tests/test_main.py::test_c - AssertionError: x\n"
    )
    parser = find("parse_log_pytest_pydantic")
    assert parser is not None
    assert parser(log) == {
        "tests/test_main.py::test_b": "FAILED",
        "tests/test_main.py::test_c": "FAILED",
    }
