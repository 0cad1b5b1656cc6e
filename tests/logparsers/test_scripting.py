"""The scripting-language parsers read each runner's log as SWE-rebench V2's publisher does:
one realistic log per runner (noise, colours and a failure or skip where the runner shows
them), and the status map that publisher's parser gives it, quirks included."""

from __future__ import annotations

import pytest

from sprout.logparsers import find
from sprout.logparsers.common import ERROR, FAILED, PASSED, SKIPPED
from sprout.logparsers.scripting import (
    PARSERS,
    parse_log_js,
    parse_log_js_2,
    parse_log_js_3,
    parse_log_js_4,
    parse_log_julia,
    parse_log_npx,
    parse_log_php_v1,
    parse_log_pytest_nebo,
    parse_log_r,
    parse_log_r_v2,
    parse_log_ruby_v1,
    parse_log_ruby_v2,
    parse_lue_nvim,
)

ESC = "\x1b"
CROSS = "\u2a2f"  # Pest's failure mark
TIMES = "\u00d7"  # vitest's failure mark
BOLD, OFF, GREEN, CYAN = f"{ESC}[1m", f"{ESC}[22m", f"{ESC}[32m", f"{ESC}[36m"
AVA = "\u203a"  # ava's title separator

MOCHA_W_LOG = """\
> beats-reporter@1.2.0 test
> mocha --reporter spec

  reporter
    ✔ should send results to beats (53ms)
    ✔ handles empty suites
    ✔ flaky webhook
    - test-summary for single suite - teams
    [W] 1) should mention group name in slack
    [W] 2) flaky webhook

  3 passing (1s)
  1 pending
  3 failing

  1) reporter
       should mention group name in slack:
     AssertionError [ERR_ASSERTION]: expected 'a' to equal 'b'
      + expected - actual

      -'a'
      +'b'

      at Context.<anonymous> (test/reporter.spec.js:42:12)

  3) root level check:
     Error: Timeout of 2000ms exceeded.
"""

MOCHA_LOG = """\
> mocha test/

  Array
    #indexOf()
      ✔ should return -1 when the value is not present
      ✔ should return the index (12ms)
      1) should throw on bad input
      - should support NaN


  2 passing (20ms)
  1 pending
  1 failing

  1) Array
       #indexOf()
         should throw on bad input:
     Error: expected [Function] to throw
      at Context.<anonymous> (test/array.js:9:11)
"""

NPX_LOG = """\
npm warn exec The following package was not found and will be installed: mocha@10.2.0

  parser
    ✔ parses numbers
    ✔ parses strings (4ms)
    ✔ parses big files (1.5s)
    1) rejects trailing commas
    2) rejects comments (test/parser.spec.js)
    - keeps order of keys

  3 passing (1s)
  1 pending
  2 failing

  1) parser
       rejects trailing commas:
     SyntaxError: Unexpected token } in JSON at position 7
"""

TAP_LOG = """\
TAP version 13
ok 1 - math {
    ok 1 - adds (1.2ms)
    not ok 2 - subtracts
      ---
      duration_ms: 0.5
      ...
    ok 3 - divides # SKIP not implemented
}
ok 2 - standalone
not ok 3 - standalone
ok 4 - # TODO write it
1..4
# tests 6
# pass 4
# fail 2
"""

AVA_VITEST_LOG = f"""\
> ava --verbose

  ✔ math {AVA} adds (105ms)
  ✔ math {AVA} multiplies
  ✘ [fail]: math {AVA} divides by zero Error thrown in test
  - [skip] math {AVA} pending feature
  ○ math {AVA} later
 ✓ [chromium]: renders the page 1.2s
 {TIMES} src/sum.test.ts > sum > subtracts 3ms
 ✓ src/sum.test.ts > sum > subtracts
   → expected 1 to be 2
  ─────────────────────────────────────
  1 test failed
"""

MINITEST_SPEC_LOG = """\
Started with run options --seed 1234

UnitTestStorageXMLCollections
  test_put_url_path_is_properly_escaped                           PASS (0.02s)
  test_collection_get_arguments                                   SKIP (0.01s)
  test_something                                                  FAIL (0.12s)
        Expected: 1
          Actual: 2
  test_other                                                      ERROR (0.00s)
  test_other                                                      PASS (0.00s)

StorageAPI
  test_put_url_path_is_properly_escaped                           PASS (0.00s)

Finished in 0.15s
5 tests, 5 assertions, 1 failures, 1 errors, 1 skips
"""

MINITEST_VERBOSE_LOG = """\
Run options: -v --seed 4242

# Running:

TestParser#test_parses_empty = 0.00 s = .
TestParser#test_rejects_bad = 0.01 s = F
TestParser#test_raises = 0.00 s = E
TestParser#test_later = 0.00 s = S

Finished in 0.0123s, 324.1 runs/s, 243.9 assertions/s.

  1) Failure:
TestParser#test_rejects_bad [test/test_parser.rb:12]:
Expected false to be truthy.

4 runs, 3 assertions, 1 failures, 1 errors, 1 skips
"""

PEST_LOG = f"""\
   PASS  Tests\\Unit\\CalculatorTest
  ✓ it adds numbers                                                      0.02s
  ✓ it subtracts numbers

   FAIL  Tests\\Feature\\ApiTest
  {CROSS} it returns users                                                     0.15s
  - it paginates → not ready yet
  ✓ it returns users                                                     0.01s
  ────────────────────────────────────────────────────────────────────────────
   FAILED  Tests\\Feature\\ApiTest > it returns users
  Failed asserting that 500 is identical to 200.

  at tests/Feature/ApiTest.php:12
  ---
  OK, but incomplete, skipped, or risky tests!
  Tests:    1 failed, 1 skipped, 2 passed (4 assertions)
  Duration: 0.31s
"""

PYTEST_XDIST_LOG = f"""\
============================= test session starts ==============================
platform linux -- Python 3.11.4, pytest-7.4.0, pluggy-1.2.0
created: 4/4 workers
4 workers [6 items]

[gw0] [ 16%] {ESC}[32mPASSED{ESC}[0m tests/test_api.py::test_get
[gw1] [ 33%] {ESC}[31mFAILED{ESC}[0m tests/test_api.py::test_post
[gw2] [ 50%] {ESC}[33mSKIPPED{ESC}[0m tests/test_api.py::test_put
[gw3] [ 66%] {ESC}[33mXFAIL{ESC}[0m tests/test_api.py::test_delete
tests/test_util.py::test_slugify[a b] PASSED [ 83%] in 0.01s
tests/test_util.py::test_wrap {ESC}[32mPASSED{ESC}[0m [100%] in 0.20s
=========================== short test summary info ============================
FAILED tests/test_api.py::test_post - assert 500 == 200
FAILED tests/test_api.py::test_contains - assert 1 in [2]
ERROR tests/test_db.py::test_conn - ConnectionError: refused
"""

JULIA_LOG = f"""\
     Testing MyPkg
     Testing Running tests...
Test Summary: | Pass  Total  Time
arithmetic    |   12     12  0.3s
strings: Test Failed at /pkg/test/strings.jl:4
  Expression: upper("a") == "B"
Test Summary: | Pass  Fail  Total  Time
strings       |    3     1      4  0.1s
Test Summary:  | Pass  Fail  Error  Total  Time
MyPkg          |   40     1      1     42  2.1s
  parsing      |   20     1            21  0.5s
  io           |   20                  20  0.4s
  network      |                 1      1  1.0s
{BOLD}Test Summary: | {OFF}{GREEN}{BOLD}Pass  {OFF}{ESC}[39m{CYAN}{BOLD}Total{OFF}
colours       | {GREEN}   5  {ESC}[39m{CYAN}    5  {ESC}[39m0.1s
ERROR: LoadError: Some tests did not pass: 75 passed, 2 failed, 1 errored, 0 broken.
"""

TESTTHAT_LOG = """\
> library(testthat)
> test_check("mypkg")
✔ | F W  S  OK | Context

⠏ |          0 | expansion
✔ |         60 | expansion [0.2s]
✖ | 2        9 | render [0.1s]
────────────────────────────────────────────────────────────────────────────────
Failure ('test-render.R:8:5'): render keeps whitespace
`out` not equal to "a b".
────────────────────────────────────────────────────────────────────────────────
✔ |      1   3 | utils

══ Results ═════════════════════════════════════════════════════════════════════
Duration: 0.5 s

── Failed tests ────────────────────────────────────────────────────────────────
Failure ('test-render.R:8:5'): render keeps whitespace
Error ('test-render.R:25:5'): render handles NA [0.1s]

[ FAIL 2 | WARN 0 | SKIP 1 | PASS 72 ]
Failure ('test-late.R:1:1'): after the summary
"""

R_CMD_CHECK_LOG = """\
* using log directory '/pkg.Rcheck'
* using R version 4.3.1 (2023-06-16)
* checking for file 'pkg/DESCRIPTION' ... OK
* checking extension type ... Package
* checking package dependencies ... OK
* checking R code for possible problems ... NOTE
foo: no visible binding for global variable 'x'
* checking Rd files ... WARNING
* checking examples ... ERROR
Running examples in 'pkg-Ex.R' failed
* checking tests ...
  Running 'testthat.R'
 ERROR
Running the tests in 'tests/testthat.R' failed.
* checking PDF version of manual ... SKIPPED
* checking re-building of vignette outputs ...
* DONE
Status: 2 ERRORs, 1 WARNING, 1 NOTE
"""

PLENARY_LOG = f"""\
Starting...Scheduling: tests/foo_spec.lua

========================================\t
Testing: \t/app/tests/foo_spec.lua\t
{ESC}[32mSuccess{ESC}[0m\t||\tfoo parses empty input\t
{ESC}[32mSuccess{ESC}[0m\t||\tfoo handles unicode\t
{ESC}[31mFail{ESC}[0m\t||\tfoo rejects bad input\t
            .../tests/foo_spec.lua:20: Expected objects to be the same.
{ESC}[32mSuccess{ESC}[0m\t||\tfoo rejects bad input\t
Skipped\t||\tfoo later\t
\t
{ESC}[32mSuccess: {ESC}[0m\t3\t
{ESC}[31mFailed : {ESC}[0m\t1\t
{ESC}[31mErrors : {ESC}[0m\t0\t
========================================\t
"""


def test_mocha_with_worker_marks_fails_the_marked_and_root_level_failures():
    assert parse_log_js(MOCHA_W_LOG) == {
        "should send results to beats": PASSED,
        "handles empty suites": PASSED,
        "flaky webhook": FAILED,  # a pass never hides a failure of the same title
        "test-summary for single suite - teams": SKIPPED,
        "should mention group name in slack": FAILED,
        "root level check": FAILED,  # the failure list's `N) title:` line
    }


def test_mocha_fails_every_numbered_line_its_suite_heading_too():
    assert parse_log_js_2(MOCHA_LOG) == {
        "should return -1 when the value is not present": PASSED,
        "should return the index": PASSED,
        "should throw on bad input": FAILED,
        "should support NaN": SKIPPED,
        "Array": FAILED,  # the failure list's `1) Array` heading, as the publisher reads it
    }


def test_npx_mocha_keeps_passes_and_failures_and_reads_no_skips():
    assert parse_log_npx(NPX_LOG) == {
        "parses numbers": PASSED,
        "parses strings": PASSED,
        "parses big files (1.5s)": PASSED,  # only `(Nms)` / `(N)` leaves a name
        "rejects trailing commas": FAILED,
        "rejects comments": FAILED,
        "parser": FAILED,
    }


def test_tap_names_nested_tests_by_their_suites():
    assert parse_log_js_3(TAP_LOG) == {
        "math": PASSED,
        "math :: adds": PASSED,
        "math :: subtracts": FAILED,
        "math :: divides": PASSED,  # the `# SKIP` directive is cut off, not read
        "standalone": FAILED,
        "# TODO write it": SKIPPED,
    }


def test_symbol_lines_pass_fail_and_skip_by_their_mark():
    assert parse_log_js_4(AVA_VITEST_LOG) == {
        f"math {AVA} adds": PASSED,
        f"math {AVA} multiplies": PASSED,
        f"math {AVA} divides by zero Error thrown in test": FAILED,
        f"-  math {AVA} pending feature": SKIPPED,  # the tag leaves, ava's dash stays
        f"math {AVA} later": SKIPPED,
        "renders the page": PASSED,
        "src/sum.test.ts > sum > subtracts": FAILED,
    }


def test_minitest_spec_lines_are_named_by_suite_and_the_worst_run_stands():
    assert parse_log_ruby_v1(MINITEST_SPEC_LOG) == {
        "UnitTestStorageXMLCollections::test_put_url_path_is_properly_escaped": PASSED,
        "UnitTestStorageXMLCollections::test_collection_get_arguments": SKIPPED,
        "UnitTestStorageXMLCollections::test_something": FAILED,
        "UnitTestStorageXMLCollections::test_other": ERROR,
        "StorageAPI::test_put_url_path_is_properly_escaped": PASSED,
    }


def test_minitest_verbose_counts_errors_as_failures():
    assert parse_log_ruby_v2(MINITEST_VERBOSE_LOG) == {
        "TestParser#test_parses_empty": PASSED,
        "TestParser#test_rejects_bad": FAILED,
        "TestParser#test_raises": FAILED,
        "TestParser#test_later": SKIPPED,
    }


def test_pest_marks_and_fail_lines():
    assert parse_log_php_v1(PEST_LOG) == {
        "it adds numbers": PASSED,
        "it subtracts numbers": PASSED,
        "Tests\\Feature\\ApiTest": FAILED,
        "it returns users": FAILED,  # the later pass does not undo it
        "it paginates → not ready yet": SKIPPED,
        "Tests\\Feature\\ApiTest > it returns users": FAILED,
        # Lines the publisher's rules catch too: PHPUnit's message, and any `skipped` line.
        "asserting that 500 is identical to 200.": FAILED,
        "OK, but incomplete, skipped, or risky tests!": SKIPPED,
    }


def test_pytest_xdist_plain_and_summary_lines():
    assert parse_log_pytest_nebo(PYTEST_XDIST_LOG) == {
        "tests/test_api.py::test_get": PASSED,
        "tests/test_api.py::test_post": FAILED,
        "tests/test_api.py::test_put": SKIPPED,
        "tests/test_util.py::test_slugify[a b]": PASSED,
        "tests/test_util.py::test_wrap": PASSED,
        # Summary lines keep their message, cut at its first ` in `.
        "tests/test_api.py::test_post - assert 500 == 200": FAILED,
        "tests/test_api.py::test_contains - assert 1": FAILED,
        "tests/test_db.py::test_conn - ConnectionError: refused": ERROR,
    }


def test_julia_summary_rows_by_their_counts():
    assert parse_log_julia(JULIA_LOG) == {
        "arithmetic": PASSED,
        "strings": FAILED,
        "MyPkg": ERROR,
        "parsing": ERROR,  # Pass, one of Fail/Error, Total: the header has both columns
        "io": PASSED,
        "network": ERROR,  # Pass left blank
        "colours": PASSED,
    }


def test_testthat_contexts_and_the_failed_tests_list():
    assert parse_log_r(TESTTHAT_LOG) == {
        "Context": PASSED,  # the table's own header row starts with a tick
        "expansion": PASSED,
        "render": FAILED,
        "utils": PASSED,
        "render keeps whitespace": FAILED,
        "render handles NA": ERROR,
    }


def test_r_cmd_check_verdicts_on_the_line_or_later():
    assert parse_log_r_v2(R_CMD_CHECK_LOG) == {
        "for file 'pkg/DESCRIPTION'": PASSED,
        "package dependencies": PASSED,
        "R code for possible problems": PASSED,
        "Rd files": FAILED,
        "examples": ERROR,
        "tests": ERROR,
        "PDF version of manual": SKIPPED,
        "re-building of vignette outputs": PASSED,  # no verdict before the log ends
    }


def test_r_cmd_check_passes_over_checks_while_one_awaits_its_verdict():
    log = "* checking tests ...\n* checking foo ... OK\n  Running 'a.R'\n OK\n"
    assert parse_log_r_v2(log) == {"tests": PASSED}


def test_plenary_busted_output_failures_outrank_passes():
    assert parse_lue_nvim(PLENARY_LOG) == {
        "foo parses empty input": PASSED,
        "foo handles unicode": PASSED,
        "foo rejects bad input": FAILED,
        "foo later": SKIPPED,
    }


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_the_registry_finds_each_parser(name):
    assert find(name) is PARSERS[name]


def test_the_plenary_aliases_are_one_parser():
    names = ("parse_lue_nvim", "parse_lua_nvim", "parse_log_lua_nvim")
    assert {find(name) for name in names} == {parse_lue_nvim}
