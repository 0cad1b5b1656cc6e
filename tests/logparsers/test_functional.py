"""The functional languages' parsers on logs as their runners print them: tasty, hspec and
HUnit under cabal; alcotest, dune's verbose display, `[TOKEN]` and status-first lines for
OCaml; ExUnit's `mix test --trace`. Where the publisher's rules give an odd name (a summary
line read as a test, an excluded test passing), the test says so: the maps must be the
publisher's, quirks included."""

from __future__ import annotations

import pytest

from sprout.logparsers import find, functional

GREEN, RED, RESET = "\x1b[32m", "\x1b[31m", "\x1b[0m"

TASTY = f"""\
Resolving dependencies...
Building test suite 'tests' for calc-0.1.0.0..
[1 of 2] Compiling Main             ( test/Main.hs, dist-newstyle/build/Main.o )
Linking dist-newstyle/build/x86_64-linux/ghc-9.4.8/calc-0.1.0.0/t/tests/build/tests/tests ...
Running 1 test suites...
Test suite tests: RUNNING...
Tests
  Parser
    parses integers:  {GREEN}OK{RESET} (0.01s)
    parses negatives: {RED}FAIL{RESET} (0.02s)
      test/Main.hs:20:
      expected: -1
       but got: 1
      Use -p '/parses negatives/' to rerun this test only.
    parses floats:    SKIP
  Printer
    round-trips:      {GREEN}OK{RESET}
      +++ OK, passed 100 tests.
    prints unicode:   ERROR
      user error (encoding)

2 out of 5 tests failed (0.03s)
Test suite tests: FAIL
"""

HSPEC_MARKS = """\
Test suite spec: RUNNING...

Data.Stack
  push
    adds an element [✔]
    keeps order [✔]
  pop
    pops the top [✔]
    pops empty [✘]
  peek
    ✔ sees the top (0.01s)
    ✘ sees nothing

Failures:

  test/Data/StackSpec.hs:20:5:
  1) Data.Stack, pop, pops empty
       expected: Nothing
        but got: Just 1

  To rerun use: --match "/Data.Stack/pop/pops empty/"

Randomized with seed 1414851392

Finished in 0.0021 seconds
6 examples, 2 failures
Test suite spec: FAIL
"""

HUNIT = """\
Cases: 4  Tried: 0  Errors: 0  Failures: 0
### Failure in: 1:arith:2
test/Spec.hs:14
expected: 4
 but got: 5
### Error in: 3:io
user error (file not found)
Cases: 4  Tried: 4  Errors: 1  Failures: 1
"""


def test_haskell_reads_tasty_words_through_colour_and_skips_cabal_lines():
    assert functional.parse_log_haskell(TASTY) == {
        "parses integers": "PASSED",
        "parses negatives": "FAILED",
        "parses floats": "SKIPPED",
        "round-trips": "PASSED",
        "prints unicode": "ERROR",
    }


def test_haskell_reads_hspec_marks_and_its_failure_list():
    assert functional.parse_log_haskell(HSPEC_MARKS) == {
        "adds an element": "PASSED",
        "keeps order": "PASSED",
        "pops the top": "PASSED",
        "pops empty": "FAILED",
        "sees the top": "PASSED",  # the timing is no part of the name
        "sees nothing": "FAILED",
        # The failure list names the test by its whole path, unlike its mark above.
        "Data.Stack, pop, pops empty": "FAILED",
    }


def test_haskell_reads_hunit_failure_and_error_headers():
    assert functional.parse_log_haskell(HUNIT) == {"1:arith:2": "FAILED", "3:io": "ERROR"}


def test_haskell_a_pass_mark_never_hides_an_earlier_failure_but_a_tasty_word_does():
    assert functional.parse_log_haskell("✘ x\n✔ x\n  y: FAIL\n  y: OK\n") == {
        "x": "FAILED",
        "y": "PASSED",
    }


HSPEC_TREE = """\
Preprocessing test suite 'spec' for stack-0.1.0.0..
Building test suite 'spec' for stack-0.1.0.0..
Running 1 test suites...
Test suite spec: RUNNING...

Data.Stack
  push
    adds an element
    keeps order
  pop
    pops empty FAILED [1]
    peeks SKIPPED
    not yet done
      # PENDING: No reason given
Data.Queue
  enqueue
    keeps order
    Golden and Actual output didn't change

Failures:

  test/Data/StackSpec.hs:20:5:
  1) Data.Stack, pop, pops empty
       expected: Nothing
        but got: Just 1

  To rerun use: --match "/Data.Stack/pop/pops empty/"

Randomized with seed 1234

Finished in 0.0012 seconds
5 examples, 1 failure, 2 pending
Test suite spec: FAIL
"""


def test_haskell_v2_names_leaves_by_their_groups():
    assert functional.parse_log_haskell_v2(HSPEC_TREE) == {
        "Data.Stack.push.adds an element": "PASSED",
        "Data.Stack.push.keeps order": "PASSED",
        "Data.Stack.pop.pops empty": "FAILED",
        "Data.Stack.pop.peeks": "SKIPPED",
        # hspec puts a pending example's reason under it, so the reason is the leaf.
        "Data.Stack.pop.not yet done.#": "SKIPPED",
        "Data.Queue.enqueue.keeps order": "PASSED",
    }


def test_haskell_v2_reads_the_summary_as_tests_when_nothing_failed():
    log = "Test suite spec: RUNNING...\nParser\n  parses\n\nFinished in 0.001 seconds\n"
    assert functional.parse_log_haskell_v2(log) == {
        "Parser.parses": "PASSED",
        "Finished in 0.001 seconds": "PASSED",
    }


ALCOTEST = """\
Testing `calc'.
This run has ID `Q8K2ZP1V'.

  [OK]          parser          0   parses integers.
  [FAIL]        parser          1   parses floats.
  [SKIP]        printer         0   round trip.
  [OK]          printer         1   escapes   quotes.
  [OK]          qcheck          0   add is commutative.

┌──────────────────────────────────────────────────────────────────────────────┐
│ [FAIL]        parser          1   parses floats.                             │
└──────────────────────────────────────────────────────────────────────────────┘
ASSERT same float
FAIL same float
   Expected: `1.5'
   Received: `1.'
Raised at Alcotest_engine__Test.check in file "src/alcotest-engine/test.ml", line 216
Logs saved to `~/_build/_tests/calc/parser.001.output'.

Full test results in `~/_build/_tests/calc'.
1 failure! in 0.003s. 5 tests run.
"""


def test_ocaml_names_alcotest_cases_by_suite_index_and_title():
    assert functional.parse_log_ocaml(ALCOTEST) == {
        "parser 0 parses integers.": "PASSED",
        "parser 1 parses floats.": "FAILED",
        "printer 0 round trip.": "SKIPPED",
        "printer 1 escapes   quotes.": "PASSED",
        "qcheck 0 add is commutative.": "PASSED",
    }


def test_ocaml_an_unknown_tag_is_an_error_and_a_pass_never_overrides():
    log = "  [FAIL]  s  0  t.\n  [OK]  s  0  t.\n  [INFO]  setup  1  starting.\n"
    assert functional.parse_log_ocaml(log) == {"s 0 t.": "FAILED", "setup 1 starting.": "ERROR"}


DUNE_VERBOSE = """\
Workspace root: /app
Shared cache: disabled
Running[1]: (cd _build/default && /usr/bin/ocamlopt.opt -o test/test_parser.exe test/x.cmx)
Running[2]: (cd _build/default/test && ./test_parser.exe)
Output[2]:
parses integers
OK
Running[3]: (cd _build/default/test && ./test_printer.exe --verbose)
Output[3]:
round trip: skipped (needs network)
Running[4]: (cd _build/default/test/unit && exec ./bin/test_unit.exe)
Output[4]:
Fatal error: exception Failure("boom")
Command [4] exited with code 2
Output[9]:
FAIL ignored: no run 9
"""


def test_ocaml_v2_judges_each_test_binary_by_its_output():
    assert functional.parse_log_ocaml_v2(DUNE_VERBOSE) == {
        "test_parser.exe": "PASSED",
        "test_printer.exe": "SKIPPED",
        "test_unit.exe": "FAILED",
    }


INLINE = """\
File "src/lib.ml", line 10, characters 0-40: <<(List.length [] = 0)>> is false.
[PASS] list: empty has length 0
[PASS]   list:  append   is associative
[FAIL] map: find missing key
[OK] map: find missing key
[error] io: read closed channel
[TODO] json: unicode escapes
[INFO] 5 tests run
"""


def test_ocaml_v3_folds_spaces_and_keeps_the_worst_report():
    assert functional.parse_log_ocaml_v3(INLINE) == {
        "list: empty has length 0": "PASSED",
        "list: append is associative": "PASSED",
        "map: find missing key": "FAILED",
        "io: read closed channel": "FAILED",
        "json: unicode escapes": "SKIPPED",
    }


STATUS_FIRST = f"""\
Finished, 42 targets (0 cached) in 00:00:03.
{GREEN}PASSED{RESET} test_add        0.001s
{RED}FAILED{RESET}  test_div_zero   expected Division_by_zero
SKIPPED test_network  needs network
ERROR   test_io  Sys_error("closed")
PASSED  test_div_zero  (retry)
All tests PASSED
"""


@pytest.mark.parametrize("name", ["parse_log_ocaml_v4", "parse_log_ocaml_v5"])
def test_ocaml_v4_and_v5_read_status_first_lines_through_colour(name):
    assert functional.PARSERS[name](STATUS_FIRST) == {
        "test_add": "PASSED",
        "test_div_zero": "FAILED",
        "test_network": "SKIPPED",
        "test_io": "ERROR",
    }


EXUNIT = """\
Compiling 3 files (.ex)
Generated calc app
Running ExUnit with seed: 123456, max_cases: 1
Excluding tags: [:integration]

Calc.MathTest [test/calc/math_test.exs]
  * test add/2 adds two numbers [L#5]\r  * test add/2 adds two numbers (0.02ms) [L#5]
  * test div/2 raises on zero [L#9]\r  * test div/2 raises on zero (1.3ms) [L#9]

  1) test div/2 raises on zero (Calc.MathTest)
     test/calc/math_test.exs:9
     Assertion with == failed
     code:  assert Calc.div(1, 0) == :error
     left:  1
     right: :error
     stacktrace:
       test/calc/math_test.exs:10: (test)

  * test pow/2 not done yet [L#14]\r  * test pow/2 not done yet (skipped) [L#14]
  * test slow network call (excluded) [L#20]

Finished in 0.05 seconds (0.00s async, 0.05s sync)
4 tests, 1 failure, 1 skipped, 1 excluded

Randomized with seed 123456
"""


def test_elixir_reads_trace_lines_and_the_failure_list():
    assert functional.parse_log_elixir(EXUNIT) == {
        "add/2 adds two numbers": "PASSED",
        "div/2 raises on zero": "FAILED",
        "pow/2 not done yet": "SKIPPED",
        # Only `(skipped)` is a note the publisher knows: an excluded test passes.
        "slow network call (excluded)": "PASSED",
    }


def test_elixir_does_not_read_coloured_lines():
    log = f"{GREEN}  * test coloured (1.0ms) [L#3]{RESET}\n{RED}  1) test red (M){RESET}\n"
    assert functional.parse_log_elixir(log) == {}


@pytest.mark.parametrize("name", sorted(functional.PARSERS))
def test_the_registry_finds_each_parser_here(name):
    assert find(name) is functional.PARSERS[name]


def test_every_name_is_here():
    assert set(functional.PARSERS) == {
        "parse_log_haskell",
        "parse_log_haskell_v2",
        "parse_log_ocaml",
        "parse_log_ocaml_v2",
        "parse_log_ocaml_v3",
        "parse_log_ocaml_v4",
        "parse_log_ocaml_v5",
        "parse_log_elixir",
    }
