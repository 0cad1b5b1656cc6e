"""Failed attempts with stored diagnostics, tasks, and chat-server replies for the role tests.

Everything is real: attempts are played by the actor in a sandbox, diagnostics
are the verifier's own type, and model replies come over HTTP from the loopback
chat server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sprout.models.config import ModelConfig
from sprout.models.openai_client import OpenAIModel
from sprout.task import SolutionStep, Task
from sprout.tree import Attempt, ModelCallRecord
from sprout.verify.types import Diagnostics, TestResult
from tests.support.chat_server import Reply, completion_body
from tests.support.world import World

FILES = {
    "README": "a task\n",
    "src/app.py": "from src.util import double\n\nprint(double(2))\n",
    "src/util.py": "def double(x):\n    return x * 2\n",
}
"""The task's files in /workspace."""

TRACEBACK = """Traceback (most recent call last):
  File "/tests/test_app.py", line 4, in test_double
    assert double(2) == 4
  File "/workspace/src/util.py", line 2, in double
    return x * 3
AssertionError"""


def diagnostics(message: str = TRACEBACK, log_tail: str = "", passed: int = 0) -> dict[str, Any]:
    """A verifier's findings with one failing test carrying `message`."""
    return Diagnostics(
        reward=0.0,
        tests=(TestResult("tests/test_app.py::test_double", "failed", message),),
        passed=passed,
        failed=1,
        errored=0,
        skipped=0,
        required_missing=(),
        source="pytest",
        log_tail=log_tail,
        summary=f"{passed} of {passed + 1} tests passed; failed: test_double",
    ).to_json()


def task_for(world: World, solution: tuple[str, ...] = ()) -> Task:
    """The world's task as the roles read it (instruction, workdir, reference solution)."""
    return Task(
        id=world.task_id,
        path=Path("/nonexistent"),
        instruction="Make double() return twice its argument.",
        workdir=world.workdir,
        solution=tuple(SolutionStep(command=command) for command in solution),
    )


def finish(world: World, attempt: Attempt, found: dict[str, Any] | None = None) -> Attempt:
    """Record the verifier's outcome (reward 0) on an attempt the actor ended."""
    world.tree.set_outcome(attempt.id, 0.0, found or diagnostics(), "--- a/x\n+++ b/x\n")
    return world.tree.attempt(attempt.id)


def model_for(base_url: str) -> OpenAIModel:
    """The real client, with its own HTTP retries off (the roles' retries are under test)."""
    return OpenAIModel("m", base_url=base_url, api_key="k", options=ModelConfig(max_retries=0))


def answer(content: str | dict[str, Any], prompt_tokens: int = 100) -> Reply:
    """A chat-server reply whose text is `content` (a dict is sent as bare JSON)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return Reply(body=completion_body(text, prompt_tokens=prompt_tokens, completion_tokens=20))


def calls(world: World, role: str) -> list[ModelCallRecord]:
    """The model calls the store recorded for `role` (the actor's own calls left out)."""
    return [call for call in world.tree.model_calls(task_id=world.task_id) if call.role == role]
