"""The JVM runners' parsers on logs as those runners print them: Maven Surefire (per class,
per `-Dtest=` run, the reactor summary), Gradle's and sbt's JUnit XML reports, testthat's junit
reporter, ScalaTest under sbt, ZIO Test, and Leiningen's clojure.test."""

from __future__ import annotations

import pytest

from sprout.logparsers import find, jvm

SUREFIRE = """\
[INFO] Scanning for projects...
[INFO] --- maven-surefire-plugin:3.2.5:test (default-test) @ demo ---
[INFO]
[INFO] -------------------------------------------------------
[INFO]  T E S T S
[INFO] -------------------------------------------------------
[INFO] Running demo.CalculatorTest
[INFO] Tests run: 4, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.041 s \
-- in demo.CalculatorTest
[INFO] Running demo.ParserTest
[ERROR] Tests run: 3, Failures: 1, Errors: 1, Skipped: 0, Time elapsed: 0.12 s \
<<< FAILURE! -- in demo.ParserTest
[ERROR] demo.ParserTest.parsesEmpty -- Time elapsed: 0.01 s <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <0> but was: <1>
\tat demo.ParserTest.parsesEmpty(ParserTest.java:21)
[INFO] Running demo.LegacyTest
[WARNING] Tests run: 2, Failures: 0, Errors: 0, Skipped: 2, Time elapsed: 0.002 s \
-- in demo.LegacyTest
[INFO]
[INFO] Results:
[INFO]
[ERROR] Failures:
[ERROR]   ParserTest.parsesEmpty:21 expected: <0> but was: <1>
[ERROR] Errors:
[ERROR]   ParserTest.parsesNull:34 » NullPointer Cannot invoke "String.length()"
[ERROR]   ParserTest.rejectsJunk:40 IllegalStateException boom
[INFO]
[ERROR] Tests run: 9, Failures: 1, Errors: 2, Skipped: 2
[INFO] ------------------------------------------------------------------------
[INFO] BUILD FAILURE
[INFO] ------------------------------------------------------------------------
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-surefire-plugin:3.2.5:test
[ERROR] -> [Help 1]
"""


def test_maven_surefire_names_classes_and_the_failed_methods():
    assert jvm.parse_java_mvn(SUREFIRE) == {
        "demo.CalculatorTest": "PASSED",
        "demo.ParserTest": "FAILED",
        "demo.ParserTest.parsesEmpty": "FAILED",
        "ParserTest.parsesEmpty": "FAILED",
        "ParserTest": "FAILED",
        "ParserTest.parsesNull": "FAILED",
        "ParserTest.rejectsJunk": "ERROR",
        "demo.LegacyTest": "SKIPPED",
        # A build outcome with no `-Dtest=` before it: the publisher's placeholder name.
        "---NO TEST NAME FOUND YET---": "FAILED",
    }


def test_maven_one_dtest_run_per_test():
    log = """\
+ mvn -B -q test -Dtest=com.example.CalculatorTest#adds -DfailIfNoTests=false
[INFO] BUILD SUCCESS
+ mvn -B -q test -Dtest=com.example.CalculatorTest#divides -DfailIfNoTests=false
[ERROR] com.example.CalculatorTest.divides:30 ArithmeticException / by zero
[INFO] BUILD FAILURE
"""
    assert jvm.parse_java_mvn(log) == {
        "com.example.CalculatorTest.divides": "ERROR",
        "com.example.CalculatorTest": "FAILED",
        "com.example.CalculatorTest#adds": "PASSED",
        "com.example.CalculatorTest#divides": "FAILED",
    }


def test_maven_reads_printed_testcases_and_else_passes_what_ran():
    xml = '<testcase name="adds" classname="com.example.CalculatorTest" time="0.01"/>'
    assert jvm.parse_java_mvn(f"[INFO] Running com.example.Noisy\n{xml}\n") == {
        "com.example.CalculatorTest adds": "PASSED"
    }
    assert jvm.parse_java_mvn("Running com.example.Cut\nRunning com.example.Short\n") == {
        "com.example.Cut": "PASSED",
        "com.example.Short": "PASSED",
    }


REACTOR = """\
[INFO] Reactor Summary for Piranha 23.6.0:
[INFO]
[INFO] Piranha ............................................ SUCCESS [  0.412 s]
[INFO] Piranha - Core API ................................. SUCCESS [  2.104 s]
[INFO] Piranha - HTTP - Implementation .................... FAILURE [  1.241 s]
[INFO] Piranha - Server ................................... SKIPPED
[INFO] ------------------------------------------------------------------------
[ERROR] Tests run: 12, Failures: 0, Errors: 1, Skipped: 0
[ERROR] Tests run: 30, Failures: 2, Errors: 0, Skipped: 0
"""


def test_maven_reactor_summary_names_modules():
    assert jvm.parse_java_mvn_v2(REACTOR) == {
        "Piranha": "PASSED",
        "Piranha - Core API": "PASSED",
        "Piranha - HTTP - Implementation": "FAILED",
        "Piranha - Server": "SKIPPED",
        "__suite__": "ERROR",
    }
    assert jvm.parse_java_mvn_v2("Tests run: 0, Failures: 0, Errors: 0, Skipped: 0") == {
        "__suite__": "SKIPPED"
    }


def test_plain_surefire_lines_give_each_class_its_status():
    log = """\
-------------------------------------------------------
 T E S T S
-------------------------------------------------------
Running com.example.KCalcTest
Tests run: 3, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.05 sec
Running com.example.KParserTest
Tests run: 2, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.1 sec <<< FAILURE!
Running com.example.KSlowTest
Tests run: 1, Failures: 0, Errors: 0, Skipped: 1, Time elapsed: 0 sec
[INFO] Running com.example.NotPlain
Tests run: 6, Failures: 1, Errors: 0, Skipped: 1
"""
    assert jvm.parse_logs_kotlin_junit(log) == {
        "com.example.KCalcTest": "PASSED",
        "com.example.KParserTest": "FAILED",
        "com.example.KSlowTest": "SKIPPED",
    }


GRADLE = """\
> Task :compileTestJava
> Task :test

CalculatorTest > divides() FAILED
    org.opentest4j.AssertionFailedError at CalculatorTest.java:30

3 tests completed, 1 failed, 1 skipped
+ cat build/test-results/test/TEST-com.example.CalculatorTest.xml
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.example.CalculatorTest" tests="3" skipped="1" failures="1" errors="0">
  <properties/>
  <testcase name="adds()" classname="com.example.CalculatorTest" time="0.004"/>
  <testcase name="divides()" classname="com.example.CalculatorTest" time="0.01">
    <failure message="expected: &lt;2&gt; but was: &lt;3&gt;">trace</failure>
  </testcase>
  <testcase name="later()" classname="com.example.CalculatorTest" time="0.0">
    <skipped/>
  </testcase>
  <system-out><![CDATA[]]></system-out>
</testsuite>
+ cat build/test-results/test/TEST-com.example.Broken.xml
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.example.Broken" tests="1">
  <testcase name="boots()" classname="com.example.Broken"><error type="x"/></testcase>
  <testcase name="cut" classname="com.example.Broken"
</testsuite>
"""


def test_gradle_reports_name_tests_the_junit4_way():
    assert jvm.parse_log_gradlew_v1(GRADLE) == {
        "adds() (com.example.CalculatorTest)": "PASSED",
        "divides() (com.example.CalculatorTest)": "FAILED",
        "later() (com.example.CalculatorTest)": "SKIPPED",
    }


SBT = """\
[info] welcome to sbt 1.9.7 (Eclipse Adoptium Java 17.0.9)
[info] compiling 4 Scala sources to /app/target/scala-2.13/test-classes ...
[info] Run completed in 812 milliseconds.
[error] Failed tests:
[error] \texample.StackSpec
+ cat target/test-reports/TEST-example.StackSpec.xml
<?xml version='1.0' encoding='UTF-8'?>
<testsuite hostname="ci" name="example.StackSpec" tests="4" errors="1" failures="1" skipped="1">
  <testcase classname="example.StackSpec" name="A Stack should pop values" time="0.01">
  </testcase>
  <testcase classname="example.StackSpec" name="A Stack should push" time="0.002">
    <failure message="1 did not equal 2" type="org.scalatest.exceptions.TestFailedException">
    </failure>
  </testcase>
  <testcase classname="example.StackSpec" name="A Stack should peek" time="0.0">
    <error message="boom" type="java.lang.RuntimeException"></error>
  </testcase>
  <testcase classname="example.StackSpec" name="A Stack should grow" time="0.0">
    <skipped/>
  </testcase>
  <testcase name="unowned" time="0.0"/>
</testsuite>
"""


def test_sbt_junit_reports_are_read_as_text():
    assert jvm.parse_log_sbt(SBT) == {
        "example.StackSpec A Stack should pop values": "PASSED",
        "example.StackSpec A Stack should push": "FAILED",
        "example.StackSpec A Stack should peek": "ERROR",
        "example.StackSpec A Stack should grow": "SKIPPED",
        "unowned": "PASSED",
    }


COMBINED = """\
==> build/reports/a.xml <==
<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="core">
    <testcase classname="core.MathTest" name="adds"/>
    <testcase classname="core.MathTest" name="divides"><failure message="x"/></testcase>
    <testcase classname="core.MathTest" name="flaky"><failure/></testcase>
  </testsuite>
</testsuites>
==> build/reports/b.xml <==
<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="io">
    <testcase classname="io.FileTest" name="reads"><skipped/></testcase>
    <testcase classname="io.FileTest" name="writes"><error/></testcase>
    <testcase classname="core.MathTest" name="flaky"/>
    <testcase name="orphan"/>
  </testsuite>
</testsuites>
"""


def test_combined_reports_let_the_later_report_win():
    assert jvm.parse_combined_test_reports(COMBINED) == {
        "core.MathTest::adds": "PASSED",
        "core.MathTest::divides": "FAILED",
        "core.MathTest::flaky": "PASSED",
        "io.FileTest::reads": "SKIPPED",
        "io.FileTest::writes": "ERROR",
        "None::orphan": "PASSED",
    }


TESTTHAT = """\
> testthat::test_local(reporter = 'junit')
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="testthat" tests="5" skipped="1" failures="1" errors="1" time="0.2">
  <testsuite name="parse" id="0" tests="3" skipped="1" failures="1" errors="0">
    <testcase time="0.01" classname="parse" name="parses_numbers"/>
    <testcase time="0.01" classname="parse" name="parses_dates">
      <failure type="failure" message="Failure (test-parse.R:12:3)">bad</failure>
    </testcase>
    <testcase time="0.0" classname="parse" name="needs_network">
      <skipped message="Reason: offline (test-parse.R:20:3)"/>
    </testcase>
  </testsuite>
  <testsuite name="io" id="1" tests="2" skipped="0" failures="0" errors="1">
    <testcase time="0.0" classname="io" name="reads_csv"><error message="boom"/></testcase>
    <testcase time="0.0" name="bare"/>
  </testsuite>
</testsuites>
Warning message: package 'withr' was built under R version 4.3.2
"""


def test_testthat_junit_reporter():
    assert jvm.parse_logs_r_junit(TESTTHAT) == {
        "parse::parses_numbers": "PASSED",
        "parse::parses_dates": "FAILED",
        "parse::needs_network": "SKIPPED",
        "io::reads_csv": "ERROR",
        "bare": "PASSED",
    }
    assert jvm.parse_logs_r_junit("Error in library(testthat)\n<?xml cut") == {}


SCALATEST = """\
[info] welcome to sbt 1.9.7 (Eclipse Adoptium Java 17.0.9)
[info] loading settings for project app-build from plugins.sbt ...
[info] StackSpec:
[info] A Stack
[info] - should pop values in last-in-first-out order (12 milliseconds)
[info] - should throw on an empty pop *** FAILED *** (3 milliseconds)
[info]   NoSuchElementException was not thrown (StackSpec.scala:21)
[info] - should peek !!! CANCELED !!! (1 millisecond)
[info] - should grow !!! IGNORED !!!
[info] - should pop values in last-in-first-out order (2 milliseconds)
[info] - should throw on an empty pop (4 milliseconds)
[info] Run completed in 842 milliseconds.
[info] Tests: succeeded 2, failed 1, canceled 1, ignored 1, pending 0
[info] *** 1 TEST FAILED ***
[error] Failed tests:
[error] \texample.StackSpec
"""


def test_scalatest_with_durations_never_lets_a_pass_hide_a_failure():
    assert jvm.parse_log_scala(SCALATEST) == {
        "should pop values in last-in-first-out order": "PASSED",
        "should throw on an empty pop": "FAILED",
        "should peek": "SKIPPED",
        "should grow": "SKIPPED",
    }


def test_scalatest_named_by_scope():
    log = """\
[info] welcome to sbt 1.9.7 (Eclipse Adoptium Java 17.0.9)
[info] compiling 2 Scala sources to /app/target/scala-2.13/test-classes ...
[info] RetrySpec:
[info] recover
[info] - should return the value (15 milliseconds)
[info] - should give up after three tries *** FAILED *** (4 milliseconds)
[info] - should back off !!! IGNORED !!!
[info] - should log *** CANCELED ***
[info] Run completed in 311 milliseconds.
[info] - should return the value *** FAILED ***
[info] - should rethrow fatal errors *** FAILED ***
[info]   java.lang.Error was not rethrown (RetrySpec.scala:30)
[info] - should retry *** FAILED ***
"""
    assert jvm.parse_log_scala_v3(log) == {
        "recover: should return the value": "FAILED",
        "recover: should rethrow fatal errors": "FAILED",
        # ScalaTest's marks read only at the line's end: these two pass under those names.
        "recover: should give up after three tries *** FAILED ***": "PASSED",
        "recover: should back off !!! IGNORED !!!": "PASSED",
        "recover: should log": "SKIPPED",
        # A failure's detail line is an `[info]` line too, so it scopes the tests after it.
        "java.lang.Error was not rethrown (RetrySpec.scala:30): should retry": "FAILED",
    }


def test_scalatest_scope_marks_the_publisher_never_wrote_fail():
    assert jvm.parse_log_scala_v3("[info] - odd *** FLAKY ***") == {"odd": "FAILED"}


ZIO = """\
[info] compiling 3 Scala sources to /app/target/scala-3.3.1/test-classes ...
\x1b[32m  + \x1b[0m\x1b[32mConfigSpec\x1b[0m
\x1b[32m  + \x1b[0m\x1b[32mreads defaults\x1b[0m \x1b[90m12ms\x1b[0m
\x1b[31m  x \x1b[0m\x1b[31mrejects negative ports\x1b[0m \x1b[90m3ms\x1b[0m
    \x1b[31m✗ -1 was not greater than 0\x1b[0m
\x1b[32m  + \x1b[0m\x1b[32mparses nested keys\x1b[0m \x1b[90m1.2s\x1b[0m
  + plain line 850μs
x [0m[31mlost escapes [0m [90m2ms[0m
\x1b[36m4 tests passed. 1 tests failed. 0 tests ignored.\x1b[0m
"""


def test_zio_test_lines_with_their_colours():
    assert jvm.parse_log_scala_v2(ZIO) == {
        "reads defaults": "PASSED",
        "rejects negative ports": "FAILED",
        "parses nested keys": "PASSED",
        "plain line": "PASSED",
        # Codes whose escape byte was lost stay as the line wrote them.
        "lost escapes ": "FAILED",
    }


LEIN = """\
Retrieving org/clojure/clojure/1.11.1/clojure-1.11.1.jar from central

lein test my.app.core-test

lein test :only my.app.parser-test/parses-dates

FAIL in (parses-dates) (parser_test.clj:14)
expected: (= 3 (count result))
  actual: (not (= 3 2))

lein test my.app.io-test

ERROR in (reads-file) (io_test.clj:9)
expected: (= "x" (slurp f))
  actual: java.io.FileNotFoundException: missing.txt

lein test my.app.util-test my.app.str-test

Ran 9 tests containing 21 assertions.
1 failures, 1 errors.
Tests failed.
"""


def test_leiningen_gives_each_namespace_one_status():
    assert jvm.parse_log_lein(LEIN) == {
        "my.app.core-test": "PASSED",
        "my.app.parser-test": "FAILED",
        "my.app.io-test": "ERROR",
        "my.app.util-test": "PASSED",
        "my.app.str-test": "PASSED",
    }


@pytest.mark.parametrize(("name", "parser"), sorted(jvm.PARSERS.items()))
def test_the_registry_finds_each_name_here(name, parser):
    assert find(name) is parser


def test_aliases_share_their_parser():
    assert find("parse_java_mvn") is find("parse_log_java_mvn") is jvm.parse_java_mvn
    assert find("parse_java_mvn_v2") is find("parse_log_java_mvn_v2") is jvm.parse_java_mvn_v2
    assert find("parse_log_junit") is find("parse_log_sbt") is jvm.parse_log_sbt
    assert find("parse_log_kotlin_junit") is jvm.parse_logs_kotlin_junit
    assert find("parse_log_r_junit") is jvm.parse_logs_r_junit
    assert find("parse_log_gradlew_v1") is jvm.parse_log_gradlew_v1
    assert find("parse_combined_test_reports") is jvm.parse_combined_test_reports
