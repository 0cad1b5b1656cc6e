"""Paths an image holds that the agent must not see (`Task.withheld`): not in checkpoint 0
nor in any fork of it, back at their paths on the verifier's fork, replacing what the
attempt put there. Over a root-filesystem image, so the overlay backend only (the copy
backend holds the workdir alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import Task, TaskError
from sprout.tasks import base_checkpoint_of
from sprout.verify import run_verifier
from tests.support.rootfs import build_rootfs

LOOK = "ls /r2e_tests /testbed 2>&1; find / -xdev -name test_1.py 2>/dev/null; echo end"


def image_with_hidden_tests(root: Path) -> Path:
    build_rootfs(root, extra=("find",))
    (root / "r2e_tests").mkdir()
    (root / "r2e_tests/test_1.py").write_text("the hidden test\n")
    (root / "testbed").mkdir()
    (root / "testbed/run_tests.sh").write_text("cat /r2e_tests/test_1.py\n")
    (root / "testbed/calc.py").write_text("kept\n")
    return root


def task_on(image: Path, tmp_path: Path, withheld: tuple[str, ...]) -> Task:
    return Task(
        id="hidden",
        path=tmp_path,
        instruction="Fix calc.",
        image=str(image),
        workdir="/testbed",
        withheld=withheld,
        verifier_command="sh /testbed/run_tests.sh",
        results="exit-code",
    )


@pytest.mark.sandbox
def test_withheld_paths_are_in_no_fork_of_checkpoint_0_but_the_verifiers(
    overlay_store: LayerStore, tmp_path: Path
) -> None:
    layers = overlay_store
    image = image_with_hidden_tests(tmp_path / "rootfs")
    task = task_on(image, tmp_path, ("/r2e_tests", "/testbed/run_tests.sh"))
    base = base_checkpoint_of(task, layers)
    with Sandbox.fork(layers, base) as agent:
        seen = agent.run(LOOK)
        planted = agent.run("mkdir /r2e_tests && echo planted > /r2e_tests/test_1.py")
        assert planted.exit_code == 0, planted.output
        turn = agent.checkpoint()
    with Sandbox.fork(layers, turn) as later:
        again = later.run("cat /testbed/run_tests.sh 2>&1; cat /r2e_tests/test_1.py")
    assert seen.output.splitlines() == [
        "ls: cannot access '/r2e_tests': No such file or directory",
        "/testbed:",
        "calc.py",
        "end",
    ]
    assert "No such file" in again.output and "planted" in again.output
    assert layers.read(base, "/testbed/run_tests.sh") is None

    verdict = run_verifier(task, layers, turn, base)
    assert verdict.reward == 1.0
    assert verdict.diagnostics.log_tail.strip() == "the hidden test"  # not the planted one
    assert layers.read(turn, "/r2e_tests/test_1.py") == b"planted\n"


@pytest.mark.sandbox
def test_a_withheld_path_the_image_lacks_is_the_tasks_error_at_set_up(
    overlay_store: LayerStore, tmp_path: Path
) -> None:
    layers = overlay_store
    image = image_with_hidden_tests(tmp_path / "rootfs")
    task = task_on(image, tmp_path, ("/r2e_tests", "/testbed/missing.sh"))
    with pytest.raises(
        TaskError, match=r"^hidden: withheld /testbed/missing\.sh: not in the image"
    ):
        base_checkpoint_of(task, layers)
