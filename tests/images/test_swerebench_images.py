"""SWE-rebench and SWE-Gym rows on images the test pushed in the publishers' layouts (a small
shell repository with its own test runners and its history: the base commit, then the fix),
at /calc for V2 and at /testbed beside a conda stand-in for V1 and SWE-Gym: checkpoint 0 is
the repository at its base commit with no later history, the verifier applies the test
patch and runs the tests, and grading is the publisher's rule over the row's parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.cli import main
from sprout.sandbox import LayerStore, Sandbox
from sprout.tasks import base_checkpoint_of
from sprout.tasks.sources.swebench_rows import apply_command
from sprout.verify import run_verifier
from tests.support.registry_world import Registry
from tests.support.requirements import require_overlay
from tests.support.row_images import placed, push_repo_image
from tests.support.swerebench_rows import (
    HALF_FIXED,
    INSTANCE,
    gym_row,
    rebench_row,
    v1_row,
    write_gym_fork,
    write_rows,
)

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def pushed(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The V2 instance's image, pushed once as swerebenchv2/acme-calc:7-SHA7."""
    tmp = tmp_path_factory.mktemp("rebench-image")
    return push_repo_image(registry, tmp, "/calc", "swerebenchv2/acme-calc", "7-base", conda=False)


@pytest.fixture(scope="module")
def pushed_gym(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The SWE-Gym instance's image, pushed once under SWE-Gym's name for it."""
    tmp = tmp_path_factory.mktemp("swegym-image")
    name = "xingyaoww/sweb.eval.x86_64.acme_s_calc-21"
    return push_repo_image(registry, tmp, "/testbed", name, "latest", conda=True)


@pytest.fixture(scope="module")
def pushed_v1(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The V1 instance's image, pushed once under the fork's name for it."""
    tmp = tmp_path_factory.mktemp("rebench-v1-image")
    name = "swerebench/sweb.eval.x86_64.acme_1776_calc-12"
    return push_repo_image(registry, tmp, "/testbed", name, "latest", conda=True)


def test_the_verifier_grades_the_fork_as_the_publisher_grades_the_patched_repository(
    pulls_removed_after: Registry,
    pushed: dict[str, str],
    overlay_store: LayerStore,
    tmp_path: Path,
) -> None:
    require_overlay()
    task = placed(write_rows(tmp_path / "v2.jsonl", [rebench_row(pushed)]))
    base = base_checkpoint_of(task, overlay_store)
    with Sandbox.fork(overlay_store, base) as sandbox:
        seen = sandbox.run(
            f"pwd; git log --all --format=%H; git cat-file -e {pushed['fix']} || echo gone; "
            "ls tests /tests"
        )
        lines = seen.output.splitlines()
        assert lines[:3] == ["/calc", pushed["base"], "gone"], seen.output
        assert "t_add.sh" not in seen.output and "No such file" in seen.output

    untouched = run_verifier(task, overlay_store, base, base).diagnostics
    assert untouched.reward == 0
    assert [(t.name, t.outcome) for t in untouched.tests] == [
        ("t_add.sh", "failed"),
        ("t_mul.sh", "failed"),
        ("t_sub.sh", "passed"),
    ]
    verdicts = {}
    half = f"cat > calc.sh <<'EOF'\n{HALF_FIXED}EOF"  # add() fixed, mul() not
    for name, command in (("gold", apply_command(pushed["patch"])), ("half", half)):
        with Sandbox.fork(overlay_store, base) as sandbox:
            applied = sandbox.run(command)
            assert applied.exit_code == 0, applied.output
            verdicts[name] = run_verifier(task, overlay_store, sandbox.checkpoint(), base)
    assert verdicts["gold"].reward == 1, verdicts["gold"].diagnostics.summary
    halfway = verdicts["half"].diagnostics
    assert halfway.reward == 0
    assert [t.name for t in halfway.tests if t.outcome != "passed"] == ["t_mul.sh"]


def test_tasks_check_fails_the_untouched_image_and_passes_the_gold_patch(
    pulls_removed_after: Registry,
    pushed: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    require_overlay()
    rows = write_rows(tmp_path / "v2.jsonl", [rebench_row(pushed)])
    assert main(["tasks", "check", str(rows)]) == 0, capsys.readouterr()
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(INSTANCE))
    assert line.split()[1:11] == [
        *("fail", "(1", "of", "3", "tests)"),
        *("pass", "(3", "of", "3", "tests)"),
    ]


@pytest.mark.parametrize("dataset", ["v1", "gym"])
def test_a_row_is_graded_by_its_forks_eval_script(
    dataset: str,
    pulls_removed_after: Registry,
    pushed_v1: dict[str, str],
    pushed_gym: dict[str, str],
    overlay_store: LayerStore,
    tmp_path: Path,
) -> None:
    """SWE-rebench V1's fork (markers) and SWE-Gym's (SWE-bench 2.0: none) alike."""
    require_overlay()
    rows = write_rows(
        tmp_path / "rows.jsonl",
        [
            v1_row(pushed_v1, docker_image=pushed_v1["image"])
            if dataset == "v1"
            else gym_row(pushed_gym, docker_image=pushed_gym["image"])
        ],
    )
    made = pushed_v1 if dataset == "v1" else pushed_gym
    task = placed(rows, swe_gym=write_gym_fork(tmp_path / "fork"))
    base = base_checkpoint_of(task, overlay_store)
    untouched = run_verifier(task, overlay_store, base, base).diagnostics
    assert untouched.reward == 0, untouched.summary
    assert [(t.name, t.outcome) for t in untouched.tests] == [
        ("t_add.sh", "failed"),
        ("t_mul.sh", "failed"),
        ("t_sub.sh", "passed"),
    ]
    verdicts = {}
    half = f"cat > calc.sh <<'EOF'\n{HALF_FIXED}EOF"
    for name, command in (("gold", apply_command(made["patch"])), ("half", half)):
        with Sandbox.fork(overlay_store, base) as sandbox:
            assert sandbox.run(command).exit_code == 0
            verdicts[name] = run_verifier(task, overlay_store, sandbox.checkpoint(), base)
    assert verdicts["gold"].reward == 1, verdicts["gold"].diagnostics.summary
    assert verdicts["half"].reward == 0
