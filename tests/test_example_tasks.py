"""The example tasks in examples/tasks: sound, and every wrong variant really is wrong.

`make demo` plays these with oracle-noise, which replaces a step by one of its
`# wrong:` variants, or (trap errors) falls into the step's `# trap:`. A variant
the hidden tests do not catch would make a noisy attempt pass by luck, and one
that breaks a later step would make the mistake loud instead of silent until the
verifier (a later step, the project's own tests included, failing): both are
checked here, and that the verifier names a trap's `# trap names:` when it fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import Task
from sprout.tasks import base_checkpoint_of, load_tasks
from sprout.verify import run_verifier
from tests.support.repo_paths import EXAMPLE_TASKS
from tests.support.requirements import require_host_image

LOADED = load_tasks([EXAMPLE_TASKS])
TASKS = {task.id: task for task in LOADED.tasks}


def test_the_examples_load_and_are_shaped_for_the_demo():
    assert LOADED.errors == []
    assert len(TASKS) >= 8
    listed = (EXAMPLE_TASKS / "README.md").read_text()
    for task in TASKS.values():
        assert f"`{task.id}`" in listed, f"{task.id} is missing from examples/tasks/README.md"
        assert not task.network and task.results == "junit"
        assert len(task.solution) >= 4
        assert not task.solution[0].wrong, f"{task.id}: exploring needs no wrong variant"
        assert sum(bool(step.wrong) for step in task.solution) >= 3, task.id
        assert "pytest" in task.solution[-1].command
        traps = [step for step in task.solution if step.trap is not None]
        assert len(traps) == 1 and traps[0].trap_names, f"{task.id}: one trap, with its names"


def _play(layers: LayerStore, start: str, commands: list[str]) -> tuple[str, list[int | None]]:
    with Sandbox.fork(layers, start) as sandbox:
        codes = [sandbox.run(command, timeout=120).exit_code for command in commands]
        return sandbox.checkpoint(), codes


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_every_wrong_variant_fails_the_hidden_tests(task_id: str, tmp_path: Path) -> None:
    require_host_image()
    task: Task = TASKS[task_id]
    layers = LayerStore(tmp_path / "layers")
    base = base_checkpoint_of(task, layers)
    assert run_verifier(task, layers, base, base).reward == 0
    # The checkpoint after each reference step, so that a variant replays only what follows it.
    after = [base]
    for step in task.solution:
        checkpoint, codes = _play(layers, after[-1], [step.command])
        assert codes == [0], f"{task_id}: reference step {len(after)} failed"
        after.append(checkpoint)
    verdict = run_verifier(task, layers, after[-1], base)
    assert verdict.reward == 1, verdict.diagnostics.summary
    for number, step in enumerate(task.solution, 1):
        later = task.solution[number:]
        for variant in step.wrong:
            end, codes = _play(layers, after[number - 1], [variant, *(s.command for s in later)])
            # Silent until the verifier: the later steps, visible tests included, all succeed.
            assert codes == [0] * len(codes), f"{task_id} step {number}: {variant}: {codes}"
            verdict = run_verifier(task, layers, end, base)
            assert verdict.reward == 0, f"{task_id} step {number} passes with: {variant}"
            if variant == step.trap:
                named = json.dumps(verdict.diagnostics.to_json())
                assert all(name in named for name in step.trap_names), (task_id, named[:500])
