"""SWE-bench Pro rows on an image the test pushed in the publisher's layout (a small Python
repository at /app with its history: the base commit, then the fix), with run scripts and
parsers of the test's own: checkpoint 0 is the repository at its base commit, the verifier
runs what the harness's entry script runs after the patch, and grading is the harness's."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.sandbox import LayerStore, Sandbox
from sprout.tasks import base_checkpoint_of
from sprout.tasks.sources.swebench_rows import apply_command
from sprout.verify import MissingResults, run_verifier
from tests.support.python_image import python_rootfs
from tests.support.registry_world import Layout, Registry, tree_blob
from tests.support.requirements import require_overlay
from tests.support.row_images import placed
from tests.support.swebench_pro_rows import (
    CRASHING_PARSER,
    FIXED,
    HALF_FIXED,
    INSTANCE,
    OLD_TESTS,
    TAG,
    make_app,
    pro_row,
    write_rows,
    write_run_scripts,
)

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def pushed(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The instance's image, pushed once as jefzda/sweap-images:TAG: its reference, and the
    repository's commits and patches."""
    tmp = tmp_path_factory.mktemp("pro-image")
    made = make_app(tmp / "app")
    root = tmp / "rootfs"
    python_rootfs(root)
    (root / "bin/python").symlink_to("python3")  # the harness runs `python parser.py`
    shutil.copytree(tmp / "app", root / "app", symlinks=True)
    (root / "etc/gitconfig").write_text("[safe]\n\tdirectory = *\n")
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    layout = Layout(tmp / "layout")
    config = {"Env": ["PATH=/usr/bin:/bin"], "WorkingDir": "/app"}
    layout.tag("v1", layout.image([tree_blob(root)], config=config))
    return {**made, "image": registry.push(layout, "v1", "jefzda/sweap-images", as_tag=TAG)}


def rows_file(folder: Path, pushed: dict[str, str], **fields: object) -> Path:
    """The instance's row (pointed at the test's registry) and its run_scripts/ beside it."""
    write_run_scripts(folder / "run_scripts")
    return write_rows(folder / "pro.jsonl", [pro_row(pushed, image_name=pushed["image"], **fields)])


def test_the_verifier_grades_the_fork_as_the_harness_grades_the_patched_repository(
    pulls_removed_after: Registry,
    pushed: dict[str, str],
    overlay_store: LayerStore,
    tmp_path: Path,
) -> None:
    require_overlay()
    task = placed(rows_file(tmp_path, pushed))
    base = base_checkpoint_of(task, overlay_store)
    with Sandbox.fork(overlay_store, base) as sandbox:  # the base commit, the old tests only
        seen = sandbox.run("pwd; git log --all --format=%H; git status --porcelain; ls /tests")
        assert seen.output.splitlines()[:2] == ["/app", pushed["base"]], seen.output
        assert pushed["fix"] not in seen.output  # checkpoint 0's history is cut after the base
        assert "No such file" in seen.output  # and /tests is not there
    assert overlay_store.read(base, "/app/tests/test_calc.py") == OLD_TESTS.encode()

    untouched = run_verifier(task, overlay_store, base, base).diagnostics
    assert untouched.reward == 0 and untouched.source == "swebench-pro:/logs/verifier/output.json"
    assert untouched.summary.startswith("1 of 3 tests passed; failed: ")
    assert overlay_store.read(base, "/app/tests/test_calc.py") == OLD_TESTS.encode()

    verdicts = {}
    for name, code in (("gold", FIXED), ("half", HALF_FIXED)):
        with Sandbox.fork(overlay_store, base) as sandbox:
            patch = pushed["patch"] if code == FIXED else _patch(pushed["patch"])
            assert sandbox.run(apply_command(patch)).exit_code == 0
            verdicts[name] = run_verifier(task, overlay_store, sandbox.checkpoint(), base)
    assert verdicts["gold"].reward == 1, verdicts["gold"].diagnostics.summary
    assert (
        "all 3 FAIL_TO_PASS and PASS_TO_PASS tests PASSED" in verdicts["gold"].diagnostics.summary
    )
    half = verdicts["half"].diagnostics
    assert half.reward == 0 and half.summary.startswith(
        "2 of 3 tests passed; failed: tests.test_calc.CalcTest.test_mul (FAILED)"
    )


def _patch(gold: str) -> str:
    """The gold patch less its fix of mul(): every selected test passes but one."""
    return gold.replace("-    return a + b\n+    return a * b\n", "     return a + b\n")


def test_a_parser_that_crashes_is_no_verdict(
    pulls_removed_after: Registry,
    pushed: dict[str, str],
    overlay_store: LayerStore,
    tmp_path: Path,
) -> None:
    require_overlay()
    rows = rows_file(tmp_path, pushed)
    (tmp_path / "run_scripts" / INSTANCE / "parser.py").write_text(CRASHING_PARSER)
    task = placed(rows)
    base = base_checkpoint_of(task, overlay_store)
    with pytest.raises(MissingResults, match=r"no output\.json among the verifier's files"):
        run_verifier(task, overlay_store, base, base)


def test_tasks_check_fails_the_untouched_image_and_passes_the_gold_patch(
    pulls_removed_after: Registry,
    pushed: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    require_overlay()
    rows = rows_file(tmp_path / "data", pushed)
    scripts = tmp_path / "data" / "run_scripts"
    elsewhere = scripts.rename(tmp_path / "checkout-run_scripts")
    assert main(["tasks", "check", str(rows), "--run-scripts", str(elsewhere)]) == 0, (
        capsys.readouterr()
    )
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(INSTANCE))
    assert line.split()[1:11] == [
        *("fail", "(1", "of", "3", "tests)"),
        *("pass", "(3", "of", "3", "tests)"),
    ]
    assert line.endswith("  ok"), line


def test_a_crashing_parser_ends_the_attempt_error_with_fault_verifier(
    pulls_removed_after: Registry,
    pushed: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    require_overlay()
    rows = rows_file(tmp_path, pushed)
    (tmp_path / "run_scripts" / INSTANCE / "parser.py").write_text(CRASHING_PARSER)
    scripts = (tmp_path / "run_scripts").rename(tmp_path / "elsewhere")
    out = tmp_path / "run"
    args = ["run", str(rows), "--run-scripts", str(scripts), "--model", "oracle"]
    args += ["--method", "pass@1", "--out", str(out)]
    assert main(args) == 1, capsys.readouterr()
    summary = json.loads((out / "results.json").read_text())["methods"]["pass@1"]
    assert (summary["resolved"], summary["failed"], summary["errors"]) == (0, 0, 1)
    assert summary["faults"] == {"verifier": 1}
    with sqlite3.connect(out / "sprout.db") as connection:
        status, fault, reward, reason = connection.execute(
            "SELECT status, fault, reward, end_reason FROM attempts WHERE task_id = ?",
            (INSTANCE,),
        ).fetchone()
    assert (status, fault, reward) == ("error", "verifier", None)
    assert "no output.json among the verifier's files" in reason
