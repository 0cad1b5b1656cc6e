"""The C/C++, Swift, C# and Dart parsers on logs of their runners, noise and quirks included."""

from __future__ import annotations

import json

import pytest

from sprout.logparsers import find, native
from sprout.logparsers.common import ERROR, FAILED, PASSED, SKIPPED

NAMES = [
    "parse_log_cpp",
    "parse_log_cpp_v2",
    "parse_log_cpp_v3",
    "parse_log_cpp_v4",
    "parse_log_swift",
    "parse_log_csharp",
    "parse_log_dart",
    "parse_log_dart_v2",
    "parse_log_dart_v3",
]


@pytest.mark.parametrize("name", NAMES)
def test_the_registry_finds_each_parser_by_its_dataset_name(name):
    assert find(name) is native.PARSERS[name]


def test_the_module_has_exactly_these_parsers():
    assert sorted(native.PARSERS) == sorted(NAMES)


def _pytest_heading(title: str) -> str:
    """A failure heading as pytest centres it on 80 columns (an odd remainder goes right)."""
    side = "_" * max((80 - len(title) - 2) // 2, 1)
    line = f"{side} {title} {side}"
    return line + "_" if len(line) < 80 else line


PYTEST_LOG = f"""\
+ python -m pytest -v tests
\x1b[1m============================= test session starts ==============================\x1b[0m
platform linux -- Python 3.11.9, pytest-8.2.0, pluggy-1.5.0 -- /usr/local/bin/python
rootdir: /testbed
collecting ... collected 7 items

tests/test_ujson.py::test_encode_decimal PASSED                          [ 14%]
tests/test_ujson.py::test_encode_dict_values[1 2] PASSED                 [ 28%]
tests/test_ujson.py::test_decode_array_nested FAILED                     [ 42%]
tests/test_ujson.py::test_decode_big_escape FAILED                       [ 57%]
tests/test_ujson.py::test_dump_to_file_like SKIPPED (needs /dev/full)    [ 71%]
tests/test_ujson.py::test_load_file_args ERROR                           [ 85%]
tests/test_ujson.py::test_decode_array_nested PASSED                     [100%]

==================================== ERRORS ====================================
{_pytest_heading("ERROR at setup of test_load_file_args")}
E       fixture 'tmp_json' not found
=================================== FAILURES ===================================
{_pytest_heading("test_decode_array_nested")}
E       AssertionError: assert [[1]] == [[2]]
{_pytest_heading("test_decode_big_escape")}
E       ValueError: Unmatched ''"' when decoding 'string'
tests/test_ujson.py::test_late PASSED
=========================== short test summary info ============================
FAILED tests/test_ujson.py::test_decode_array_nested - AssertionError
== 2 failed, 3 passed, 1 skipped, 1 error in 0.31s ==
"""


def test_cpp_reads_pytest_verbose_lines_then_the_failure_headings():
    assert native.parse_log_cpp(PYTEST_LOG) == {
        "test_encode_decimal": PASSED,
        "test_encode_dict_values[1 2]": PASSED,
        "test_decode_array_nested": FAILED,  # a later pass does not hide it
        "test_decode_big_escape": FAILED,
        "test_dump_to_file_like": SKIPPED,
        "test_load_file_args": ERROR,
        # The ERRORS banner and heading are verdict lines too: the rule before ` ERROR` names them.
        "=" * 36: ERROR,
        _pytest_heading("ERROR at setup of test_load_file_args").split(" ")[0]: ERROR,
        # Below the FAILURES banner only 27-underscore headings count (24-character titles),
        # and no verdict line (test_late).
    }


def test_cpp_counts_a_failure_heading_only_under_the_banner():
    heading = _pytest_heading("test_bigint_overflow_neg")
    assert native.parse_log_cpp(f"{heading}\n") == {}
    banner = "=" * 35 + " FAILURES " + "=" * 35
    assert native.parse_log_cpp(f"{banner}\n{heading}\n") == {"test_bigint_overflow_neg": FAILED}


def test_cpp_reads_no_coloured_verdict():
    assert native.parse_log_cpp("tests/t.py::test_a \x1b[32mPASSED\x1b[0m\n") == {}


HARNESS_LOG = """\
[ 50%] Building C object tests/CMakeFiles/run_tests.dir/test_alloc.c.o
[100%] Linking C executable run_tests
Testing allocator (4 cases)
Test basic_alloc                      passed
Test realloc_grow                     failed
    tests/test_alloc.c:42: assertion failed: ptr != NULL
Test mmap huge pages                  skipped
Test realloc_grow                     passed
Test free_null                        passed
Test print_stats                      \x1b[32mpassed\x1b[0m
3 passed, 1 failed, 1 skipped
"""


def test_cpp_v2_reads_the_harness_lines_and_keeps_a_failure():
    assert native.parse_log_cpp_v2(HARNESS_LOG) == {
        "basic_alloc": PASSED,
        "realloc_grow": FAILED,
        "mmap huge pages": SKIPPED,
        "free_null": PASSED,
    }


PENGUIN_BOTAN_LOG = """\
-- Build files have been written to: /testbed/build
[1/6] File: Save and load black gray-scale bitmap image... OK
[2/6] image_function::GetThreshold (form 1)... OK
[3/6] image_function::Histogram (form 2)... FAILED
[4/6] image_function::Rotate (cuda)... SKIPPED
[5/6] image_function::Merge... Crash
[6/6] image_function::Flip... ok
AES-128 ran 17370 tests in 34.33 msec all ok
ChaCha ran 2048 tests in 12.1 msec 3 tests failed
Result: 1 of 6 tests FAILED
"""


def test_cpp_v3_reads_ellipsis_lines_botan_summaries_and_verdict_lines():
    assert native.parse_log_cpp_v3(PENGUIN_BOTAN_LOG) == {
        "File: Save and load black gray-scale bitmap image": PASSED,
        "image_function::GetThreshold (form 1)": PASSED,
        "image_function::Histogram (form 2)": FAILED,
        "image_function::Rotate (cuda)": SKIPPED,
        "image_function::Merge": ERROR,  # a word that is no verdict
        "image_function::Flip": PASSED,
        "AES-128 ran 17370 tests all ok": PASSED,
        "ChaCha ran 2048 tests 3 tests failed": FAILED,
        "Result: 1 of 6 tests FAILED": FAILED,  # the publisher's catch-all: the line is the name
    }


CTEST_LOG = """\
Test project /testbed/build
      Start  1: test_vector
 1/5 Test  #1: test_vector ......................   Passed    0.01 sec
      Start  2: test_string
 2/5 Test  #2: test_string ......................***Failed    0.02 sec
      Start  3: test_network
 3/5 Test  #3: test_network .....................***Skipped   0.00 sec
      Start  4: test_slow
 4/5 Test  #4: test_slow ........................***Timeout  10.01 sec
      Start  5: test_io
 5/5 Test  #5: test_io ..........................   Passed    0.30 sec

40% tests passed, 3 tests failed out of 5
The following tests FAILED:
\t  2 - test_string (Failed)
"""


def test_cpp_v4_reads_ctest_summaries_with_a_blank_before_the_verdict():
    """CTest's `***` verdicts are not read: only the passes are."""
    assert native.parse_log_cpp_v4(CTEST_LOG) == {"test_vector": PASSED, "test_io": PASSED}


def test_cpp_v4_maps_each_verdict_word():
    log = (
        "1/3 Test #1: a ....   Failed  0.1 sec\n"
        "2/3 Test #2: b ....   TIMEOUT  9 sec\n"
        "3/3 Test #3: c d .... Skipped\n"
    )
    assert native.parse_log_cpp_v4(log) == {"a": FAILED, "b": FAILED, "c d": SKIPPED}


SWIFT_LOG = """\
[0/1] Planning build
Building for debugging...
[5/5] Linking MyLibPackageTests.xctest
Build complete! (12.34s)
Test Suite 'All tests' started at 2024-05-01 10:00:00.000
Test Suite 'ParserTests' started at 2024-05-01 10:00:00.001
Test Case 'ParserTests.testParsesEmpty' started at 2024-05-01 10:00:00.001
Test Case 'ParserTests.testParsesEmpty' passed (0.001 seconds)
Test Case 'ParserTests.testRejectsGarbage' started at 2024-05-01 10:00:00.002
/testbed/Tests/MyLibTests/ParserTests.swift:42: error: ParserTests.testRejectsGarbage : \
XCTAssertEqual failed: ("1") is not equal to ("2")
Test Case 'ParserTests.testRejectsGarbage' failed (0.002 seconds)
Test Case 'ParserTests.testNetwork' started at 2024-05-01 10:00:00.004
/testbed/Tests/MyLibTests/ParserTests.swift:50: ParserTests.testNetwork : Test skipped
Test Case 'ParserTests.testNetwork' skipped (0.000 seconds)
Test Suite 'ParserTests' failed at 2024-05-01 10:00:00.005
\t Executed 3 tests, with 1 test skipped and 1 failure (0 unexpected) in 0.003 seconds
"""


def test_swift_reads_xctest_case_results():
    assert native.parse_log_swift(SWIFT_LOG) == {
        "ParserTests.testParsesEmpty": PASSED,
        "ParserTests.testRejectsGarbage": FAILED,
    }


DOTNET_LOG = """\
  Determining projects to restore...
  All projects are up-to-date for restore.
  MyLib.Tests -> /testbed/tests/MyLib.Tests/bin/Debug/net8.0/MyLib.Tests.dll
Test run for /testbed/tests/MyLib.Tests/bin/Debug/net8.0/MyLib.Tests.dll (.NETCoreApp,Version=v8.0)
Starting test execution, please wait...
[xUnit.net 00:00:00.00] xUnit.net VSTest Adapter v2.5.3+6b60a9e56a (64-bit .NET 8.0.0)
[xUnit.net 00:00:00.35]   Discovering: MyLib.Tests
[xUnit.net 00:00:00.52]     MyLib.Tests.LexerTests.Crashes [FAIL]
[xUnit.net 00:00:00.53]       Assert.Equal() Failure
  Passed MyLib.Tests.ParserTests.ParsesEmpty [4 ms]
  Passed MyLib.Tests.ParserTests.ParsesNumber(input: "42", expected: 42) [< 1 ms]
  Failed MyLib.Tests.LexerTests.Crashes [12 ms]
  Error Message:
   Assert.Equal() Failure
  Stack Trace:
     at MyLib.Tests.LexerTests.Crashes() in /testbed/tests/LexerTests.cs:line 30
  Skipped MyLib.Tests.ParserTests.NeedsNetwork [1 ms]
  Passed MyLib.Tests.ParserTests.Sums(values: [1, 2, 3]) [2 ms]
  Passed MyLib.Tests.LexerTests.Crashes [3 ms]

\x1b[31;1mFailed!  - Failed:     1, Passed:     4, Skipped:     1, Total:     6\x1b[m
"""


def test_csharp_reads_dotnet_test_and_xunit_lines():
    assert native.parse_log_csharp(DOTNET_LOG) == {
        "MyLib.Tests.LexerTests.Crashes": FAILED,  # the later pass does not hide it
        "MyLib.Tests.ParserTests.ParsesEmpty": PASSED,
        'MyLib.Tests.ParserTests.ParsesNumber(input: "42", expected: 42)': PASSED,
        "MyLib.Tests.ParserTests.NeedsNetwork": SKIPPED,
        "MyLib.Tests.ParserTests.Sums(values:": PASSED,  # cut at the array's ` [`
    }


def _dart_event(kind: str, **fields: object) -> str:
    return json.dumps({**fields, "type": kind})


def _dart_test(test_id: int, name: str) -> dict[str, object]:
    return {"id": test_id, "name": name, "suiteID": 0, "groupIDs": [2], "line": 5, "column": 5}


def _dart_done(test_id: int, result: str, *, skipped: bool = False, hidden: bool = False) -> str:
    return _dart_event(
        "testDone", testID=test_id, result=result, skipped=skipped, hidden=hidden, time=9
    )


DART_JSON_LOG = "\n".join(
    [
        "Resolving dependencies...",
        "Got dependencies!",
        _dart_event("start", protocolVersion="0.1.1", runnerVersion="1.25.2", pid=41),
        _dart_event("suite", suite={"id": 0, "platform": "vm", "path": "test/parser_test.dart"}),
        _dart_event("testStart", test=_dart_test(1, "loading test/parser_test.dart")),
        _dart_done(1, "success", hidden=True),
        _dart_event("group", group={"id": 2, "name": "Parser", "testCount": 5}),
        _dart_event("testStart", test=_dart_test(3, "Parser parses empty input")),
        _dart_done(3, "success"),
        _dart_event("testStart", test=_dart_test(4, "Parser rejects garbage")),
        _dart_event("print", testID=4, messageType="print", message="{not json"),
        _dart_event("error", testID=4, error="Expected: <1>\n  Actual: <2>", isFailure=True),
        _dart_done(4, "failure"),
        _dart_event("testStart", test=_dart_test(5, "Parser throws on null")),
        _dart_done(5, "error"),
        _dart_event("testStart", test=_dart_test(6, "Parser reads the network")),
        _dart_done(6, "success", skipped=True),
        _dart_event("testStart", test=_dart_test(7, "Parser (tearDownAll)")),
        _dart_done(7, "success", hidden=True),
        _dart_event("done", success=False, time=400),
        "\x1b[31mSome tests failed.\x1b[0m",
    ]
)


def test_dart_reads_the_json_reporter_events():
    assert native.parse_log_dart(DART_JSON_LOG) == {
        "Parser parses empty input": PASSED,
        "Parser rejects garbage": FAILED,
        "Parser throws on null": ERROR,
        "Parser reads the network": PASSED,  # skipped, but its result says success
    }


def test_dart_reads_events_in_a_json_array_and_skips_without_a_result():
    events = [
        {"type": "testStart", "test": _dart_test(1, "a")},
        {"type": "testDone", "testID": 1, "skipped": True, "hidden": False},
    ]
    assert native.parse_log_dart(json.dumps(events)) == {"a": SKIPPED}


MELOS_LOG = """\
$ melos exec -- dart test --reporter expanded
[core]: 00:00 +0: loading /app/packages/core/test/parser_test.dart
[core]: 00:01 +0: /app/packages/core/test/parser_test.dart: Parser parses empty input
[core]: 00:01 +1: /app/packages/core/test/parser_test.dart: Parser parses empty input
[core]: 00:01 +1: /app/packages/core/test/parser_test.dart: Parser rejects garbage
[core]: 00:01 +1 -1: /app/packages/core/test/parser_test.dart: Parser rejects garbage [E]
[core]:   Expected: <1>
[core]: 00:02 +1 -1: /app/packages/core/test/parser_test.dart: Parser lazy loading
[core]: 00:02 +2 -1: /app/packages/core/test/parser_test.dart: Parser lazy loading
[core]: 00:02 +2 ~1 -1: /app/packages/core/test/parser_test.dart: Parser reads the network
[core]: 00:02 +2 ~1 -1: Some tests failed.
"""


def test_dart_v2_passes_a_test_printed_twice_and_errors_one_printed_once():
    assert native.parse_log_dart_v2(MELOS_LOG) == {
        "/app/packages/core/test/parser_test.dart: Parser parses empty input": PASSED,
        "/app/packages/core/test/parser_test.dart: Parser rejects garbage": ERROR,
    }


EXPANDED_LOG = """\
Resolving dependencies...
00:00 +0: loading /app/test/parser_test.dart
00:01 +0: /app/test/parser_test.dart: Parser parses empty input
00:01 +1: /app/test/parser_test.dart: Parser rejects garbage
00:01 +1 -1: /app/test/parser_test.dart: Parser rejects garbage [E]
  Expected: <1>
    Actual: <2>
  test/parser_test.dart 12:7  main.<fn>.<fn>
00:01 +1 -1: /app/test/parser_test.dart: Parser handles unicode
00:02 +2 -2: loading /app/test/broken_test.dart [E]
  Failed to load "/app/test/broken_test.dart": Error: Expected ';' after this.
00:02 +2 ~1 -2: /app/test/parser_test.dart: Parser reads the network
00:02 +2 ~1 -2: Some tests failed.
"""


def test_dart_v3_reads_expanded_reporter_lines():
    assert native.parse_log_dart_v3(EXPANDED_LOG) == {
        "/app/test/parser_test.dart: Parser parses empty input": PASSED,
        "/app/test/parser_test.dart: Parser rejects garbage": FAILED,
        "/app/test/parser_test.dart: Parser handles unicode": PASSED,  # `-1` alone fails none
        "/app/test/broken_test.dart": ERROR,
    }
