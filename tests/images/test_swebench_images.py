"""A SWE-bench row on the image the test pushed: a small Python repository at /testbed (its
history after the base commit cut from checkpoint 0), no clone and no sidecar, graded by
the `swebench` package's parser with the verdict of the package's own grading; `sprout
tasks check` fails the untouched image and passes the gold patch, as SWE-bench's
validation does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.task import GitHistory, SweBenchGrading
from sprout.tasks import load_tasks
from sprout.verify.swebench_grading import grade
from tests.support.git_history_repo import git
from tests.support.python_image import python_rootfs
from tests.support.registry_world import Layout, Registry, layer_blob, tree_blob
from tests.support.requirements import require_overlay

BUGGY = "def add(a, b):\n    return a - b\n"
GOLD = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""
TESTS = """import unittest

from calc import add


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_zero(self):
        self.assertEqual(add(0, 0), 0)
"""
EVAL_SCRIPT = f"""#!/bin/bash
set -uxo pipefail
cd /testbed
mkdir -p tests
cat > tests/test_calc.py <<'EOF_114329324912'
{TESTS}EOF_114329324912
: '>>>>> Start Test Output'
python3 -m unittest -v tests.test_calc
: '>>>>> End Test Output'
rm -f tests/test_calc.py
"""
F2P = "test_add (tests.test_calc.CalcTest.test_add)"
P2P = "test_zero (tests.test_calc.CalcTest.test_zero)"


def push_instance(registry: Registry, tmp_path: Path) -> tuple[str, str]:
    """The instance's image, whose /testbed holds the repository with its history after
    the base commit, as SWE-bench's images have it: its reference, and the base commit."""
    root = tmp_path / "rootfs"
    python_rootfs(root)
    (root / "testbed").mkdir()
    (root / "testbed/calc.py").write_text(BUGGY)
    base = _history(root / "testbed")
    layout = Layout(tmp_path / "layout")
    config = {"Env": ["PATH=/usr/bin:/bin"], "WorkingDir": "/testbed"}
    marker = layer_blob({"etc/instance": b"acme__calc-1\n"})
    layout.tag("latest", layout.image([tree_blob(root), marker], config=config))
    return registry.push(layout, "latest", "swebench/sweb.eval.x86_64.acme_1776_calc-1"), base


def _history(testbed: Path) -> str:
    """/testbed as a repository at its base commit, the gold patch committed after it (and
    tagged), then reset away: the base commit."""
    git(testbed, "init", "-q", "-b", "main")
    git(testbed, "add", "calc.py")
    git(testbed, "commit", "-q", "-m", "base")
    (testbed / "calc.py").write_text(BUGGY.replace("a - b", "a + b"))
    git(testbed, "commit", "-q", "-am", "fix add()")
    git(testbed, "tag", "v1.0")
    git(testbed, "reset", "-q", "--hard", "HEAD~1")
    subprocess.run(["chmod", "-R", "a+rX", str(testbed)], check=True)
    return git(testbed, "rev-parse", "HEAD")


def row(image: str) -> dict[str, object]:
    return {
        "instance_id": "acme__calc-1",
        "repo": "acme/calc",
        "version": "1.0",
        "base_commit": "0" * 40,
        "problem_statement": "add() subtracts. Make it add.",
        "patch": GOLD,
        "FAIL_TO_PASS": json.dumps([F2P]),
        "PASS_TO_PASS": json.dumps([P2P]),
        "eval_script": EVAL_SCRIPT,
        "log_parser": "parse_log_django",
        "eval_type": "pass_and_fail",
        "image": image,
    }


def test_a_row_names_its_image_or_gets_the_harness_name_and_needs_no_clone(
    tmp_path: Path,
) -> None:
    rows = tmp_path / "rows.jsonl"
    named = row("ghcr.io/acme/calc:1")
    derived = {k: v for k, v in row("").items() if k != "image"}
    rows.write_text(json.dumps(named) + "\n" + json.dumps({**derived, "instance_id": "a__b-2"}))
    loaded = load_tasks([rows])  # no --repos
    assert loaded.errors == []
    first, second = loaded.tasks
    assert first.image == "ghcr.io/acme/calc:1" and first.workdir == "/testbed"
    assert second.image == "swebench/sweb.eval.x86_64.a_1776_b-2:latest"
    assert first.results == "swebench" and first.setup == ()
    assert first.swebench is not None and first.swebench.fail_to_pass == (F2P,)
    assert "tests/test_calc.py" in first.test_files["eval.sh"]  # hidden: /tests only
    assert "SWEBENCH_TEST_EXIT_CODE=$?" in first.test_files["eval.sh"]
    assert EVAL_SCRIPT not in first.instruction
    assert first.git_history == GitHistory(repo="/testbed", base_commit="0" * 40)
    rows.write_text(json.dumps({k: v for k, v in named.items() if k != "base_commit"}) + "\n")
    [without] = load_tasks([rows]).tasks
    assert without.git_history is None, "a row without base_commit has no history cut"


def test_a_row_with_an_unknown_parser_is_one_line_naming_the_field(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({**row("x:1"), "log_parser": "parse_log_nothing"}) + "\n")
    [error] = load_tasks([rows]).errors
    assert error.startswith(f"acme__calc-1: {rows}:1: log_parser: ")
    assert "not a parser of the swebench package" in error


@pytest.mark.sandbox
def test_tasks_check_fails_the_untouched_image_and_passes_the_gold_patch(
    pulls_removed_after: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_overlay()
    image, base = push_instance(pulls_removed_after, tmp_path)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({**row(image), "base_commit": base}) + "\n")
    assert main(["tasks", "check", str(rows)]) == 0, capsys.readouterr()
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("acme__calc-1"))
    assert line.split()[1] == "fail" and "pass" in line.split() and line.endswith("  ok"), line


def test_the_graders_verdict_on_a_real_unittest_log_is_the_packages(tmp_path: Path) -> None:
    """The eval script's unittest output, made here by the host's Python, read by the
    package's Django parser: our reward is the package's `get_eval_report` verdict."""
    from swebench.harness.grading import get_eval_report

    from sprout.verify.swebench_grading import harness_spec

    grading = SweBenchGrading(
        instance_id="acme__calc-1",
        repo="acme/calc",
        log_parser="parse_log_django",
        fail_to_pass=(F2P,),
        pass_to_pass=(P2P,),
    )
    for code, resolved in ((BUGGY, False), (BUGGY.replace("-", "+"), True)):
        (tmp_path / "calc.py").write_text(code)
        (tmp_path / "tests").mkdir(exist_ok=True)
        (tmp_path / "tests/test_calc.py").write_text(TESTS)
        run = subprocess.run(  # -B: the second calc.py has the first's size and mtime second,
            # so bytecode cached from the first would run in its place
            ["/usr/bin/python3.11", "-B", "-m", "unittest", "-v", "tests.test_calc"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        log = f"+ : '>>>>> Start Test Output'\n{run.stderr}+ : '>>>>> End Test Output'\n"
        assert grade(log, grading, exit_code=0).reward == float(resolved)
        path = tmp_path / "test_output.txt"
        path.write_text(log)
        prediction = {"instance_id": "acme__calc-1", "model_patch": "x", "model_name": "m"}
        report = get_eval_report(harness_spec(grading), prediction, str(path), False)
        assert report["acme__calc-1"]["resolved"] is resolved


def test_a_row_whose_image_is_no_reference_is_one_line_naming_the_field(tmp_path: Path) -> None:
    (tmp_path / "Not An Image").mkdir()  # a folder of that name beside the rows is no image
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row("Not An Image")) + "\n")
    [error] = load_tasks([rows]).errors
    assert error == (
        f"acme__calc-1: {rows}:1: image: image 'Not An Image': not an image reference "
        "(lowercase NAME[:TAG][@sha256:DIGEST], an optional REGISTRY/ first)"
    )
