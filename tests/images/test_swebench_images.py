"""A SWE-bench row on the image the test pushed: a small Python repository at /testbed, no
clone and no sidecar, graded by the `swebench` package's parser with the verdict of the
package's own grading; `sprout tasks check` fails the untouched image and passes the gold
patch, as SWE-bench's validation does."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.task import SweBenchGrading
from sprout.tasks import load_tasks
from sprout.verify.swebench_grading import grade
from tests.support.registry_world import Layout, Registry, layer_blob, tree_blob
from tests.support.requirements import require_overlay
from tests.support.rootfs import build_rootfs

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
STDLIB_LEFT_OUT = ("test", "idlelib", "tkinter", "ensurepip", "lib2to3", "pydoc_data")


def python_rootfs(root: Path) -> None:
    """The minimal root filesystem with Debian's Python 3.11 (its stdlib, less its tests),
    git (the oracle applies the gold patch with it) and bash (the eval script's shell)."""
    python = Path("/usr/bin/python3.11")
    if not python.exists():
        pytest.skip("Debian's python3.11 is needed for the image of this test")
    build_rootfs(root, extra=("bash", "git"))
    shutil.copy(python, root / "bin/python3")
    output = subprocess.run(["ldd", str(python)], capture_output=True, text=True).stdout
    for library in re.findall(r"(/\S+) \(0x[0-9a-f]+\)", output):
        target = root / library.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.realpath(library), target)
    shutil.copytree(
        "/usr/lib/python3.11",
        root / "usr/lib/python3.11",
        ignore=shutil.ignore_patterns(*STDLIB_LEFT_OUT, "__pycache__", "dist-packages"),
        symlinks=True,
    )
    (root / "testbed").mkdir()
    (root / "testbed/calc.py").write_text(BUGGY)
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)


def push_instance(registry: Registry, tmp_path: Path) -> str:
    root = tmp_path / "rootfs"
    python_rootfs(root)
    layout = Layout(tmp_path / "layout")
    config = {"Env": ["PATH=/usr/bin:/bin"], "WorkingDir": "/testbed"}
    marker = layer_blob({"etc/instance": b"acme__calc-1\n"})
    layout.tag("latest", layout.image([tree_blob(root), marker], config=config))
    return registry.push(layout, "latest", "swebench/sweb.eval.x86_64.acme_1776_calc-1")


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
    image = push_instance(pulls_removed_after, tmp_path)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row(image)) + "\n")
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
