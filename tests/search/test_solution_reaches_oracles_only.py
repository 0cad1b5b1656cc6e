"""A task's reference solution reaches a model only when the model declares it replays it
(the oracle simulations): a served model, whatever it is, is built without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sprout.models.resolve import ModelSpec
from sprout.search import runner
from sprout.search.registry import parse_methods
from sprout.tasks import load_native
from tests.support.taskfolders import calc_task


@pytest.mark.parametrize(("model", "gets_steps"), [("openai/m", False), ("oracle", True)])
def test_only_a_model_that_replays_the_solution_is_given_its_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, gets_steps: bool
) -> None:
    task = load_native(calc_task(tmp_path, "calc"))
    assert task.solution, "the task has a reference solution to withhold"
    given: dict[str, Any] = {}
    monkeypatch.setattr(ModelSpec, "build", lambda spec, args: given.update(vars(args)))
    spec = ModelSpec.parse(model)
    settings = runner.RunSettings(spec, parse_methods("pass@1"), base_url="http://127.0.0.1:1")
    runner._model(settings, task)
    assert (given["steps"] is not None) == gets_steps
