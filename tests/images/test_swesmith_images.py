"""SWE-smith rows on an image the test pushed in SWE-smith's layout (the repository's clean
commit at /testbed, conda and the profile's `pytest` stood in for): checkpoint 0 has the bug
in a history of one commit and no FAIL_TO_PASS test file, and SWE-smith's own grader, run
in the interpreter with the swesmith package, decides the reward."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.tasks import base_checkpoint_of
from sprout.verify import run_verifier
from tests.support.registry_world import Registry
from tests.support.requirements import require_overlay
from tests.support.row_images import placed, push_repo_image
from tests.support.swesmith_rows import (
    BUGGY,
    HALF_FIXED,
    PYTEST_STAND_IN,
    make_clean_repo,
    smith_row,
    swesmith_python,
    write_rows,
)

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def pushed(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("swesmith-image")
    name = "jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536"
    return push_repo_image(
        registry,
        tmp,
        "/testbed",
        name,
        "latest",
        conda=True,
        make=make_clean_repo,
        programs={"/usr/bin/pytest": PYTEST_STAND_IN},
    )


def test_the_bug_is_planted_without_its_history_and_smiths_grader_decides(
    pulls_removed_after: Registry,
    pushed: dict[str, str],
    overlay_store: LayerStore,
    tmp_path: Path,
) -> None:
    require_overlay()
    python = swesmith_python()
    task = placed(write_rows(tmp_path / "smith.jsonl", [smith_row(pushed)]), swe_smith=python)
    base = base_checkpoint_of(task, overlay_store)
    with Sandbox.fork(overlay_store, base) as sandbox:
        seen = sandbox.run("git rev-list --all --count; git status --porcelain; ls tests")
        assert seen.output.split() == ["1", "test_sub.py"], seen.output
        assert sandbox.read("/testbed/calc.sh") == BUGGY.encode()

    untouched = run_verifier(task, overlay_store, base, base).diagnostics
    assert untouched.reward == 0, untouched.summary
    assert [(t.name, t.outcome) for t in untouched.tests] == [
        ("tests/test_ops.py::test_add", "failed"),
        ("tests/test_ops.py::test_mul", "failed"),
        ("tests/test_sub.py::test_sub", "passed"),
    ]
    assert "graded by SWE-smith's own get_eval_report" in untouched.summary
    verdicts = {}
    half = f"cat > calc.sh <<'EOF'\n{HALF_FIXED}EOF"
    # the gold patch reversed; half the fix; the fix plus a P2P test file gamed to pass
    gamed = f"{task.solution[0].command}\necho 'test_sub|echo 0|0' > tests/test_sub.py"
    for name, command in (("gold", task.solution[0].command), ("half", half), ("gamed", gamed)):
        with Sandbox.fork(overlay_store, base) as sandbox:
            done = sandbox.run(command)
            assert done.exit_code == 0, done.output
            verdicts[name] = run_verifier(task, overlay_store, sandbox.checkpoint(), base)
    assert verdicts["gold"].reward == 1, verdicts["gold"].diagnostics.summary
    assert verdicts["half"].reward == 0
    assert verdicts["gamed"].reward == 1, "its test file is put back as committed"
