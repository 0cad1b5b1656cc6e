"""Failed attempts far longer than a small context window, written straight into a tree.

Each turn runs one call that prints a long build log ending with its turn's last line,
so a test can tell whose output a prompt kept the tail of; every attempt ends failed
and verified, with a long patch and a long verifier log. No model, no sandbox: what the
roles read of an attempt is the tree's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sprout.task import Task
from sprout.tree import Attempt, CallRecord, RolloutTree, Turn

TASK = "long-task"
METHOD = "sprout"


def last_line(attempt: Attempt, index: int) -> str:
    """The last line turn `index` of `attempt` printed."""
    return f"attempt {attempt.id} turn {index} ends here"


def log(attempt: Attempt, index: int, lines: int) -> str:
    """`lines` lines of build log, then the turn's own last line."""
    body = "".join(f"step {n} of the build prints a fairly long line\n" for n in range(lines))
    return body + last_line(attempt, index)


class LongAttempts:
    """A tree holding one task's long failed attempts."""

    def __init__(self, folder: Path) -> None:
        self.tree = RolloutTree(folder / "sprout.db")
        self.tree.add_task(TASK, {})
        self.task = Task(
            id=TASK,
            path=Path("/nonexistent"),
            instruction="Make the build pass. " + "Mind every detail of the spec. " * 200,
            workdir="/app",
        )

    def root(self, turns: int, lines: int = 300) -> Attempt:
        """A failed root of `turns` turns, each printing `lines` lines."""
        prefix = [
            {"role": "system", "content": "You are a careful engineer."},
            {"role": "user", "content": self.task.instruction},
        ]
        attempt = self.tree.root(TASK, prefix, "base", method=METHOD)
        self._play(attempt, range(1, turns + 1), lines)
        return self._fail(attempt)

    def branch(self, parent: Attempt, boundary: int, turns: int, lines: int = 300) -> Attempt:
        """A failed branch of `parent` at `boundary`, with a starting turn and `turns` more."""
        starting = f"Retry from turn {boundary}.\n\n```bash\nmake build\n```"
        attempt = self.tree.branch(parent, boundary, starting, method=METHOD)
        self._play(attempt, range(boundary + 1, boundary + turns + 1), lines)
        return self._fail(attempt)

    def _play(self, attempt: Attempt, indexes: range, lines: int) -> None:
        for index in indexes:
            output = log(attempt, index, lines)
            text = f"Turn {index}: let me rebuild and read the log. " + "Thinking hard. " * 60
            self.tree.commit_turn(
                Turn(
                    attempt_id=attempt.id,
                    index=index,
                    author="actor",
                    text=f"{text}\n\n```bash\nmake build 2>&1 | tee build-{index}.log\n```",
                    calls=(CallRecord(f"make build 2>&1 | tee build-{index}.log", output, 2),),
                    messages=(
                        {"role": "assistant", "content": text},
                        {"role": "user", "content": output},
                    ),
                    checkpoint=f"layer-{attempt.id}-{index}",
                    changes=(),
                )
            )

    def _fail(self, attempt: Attempt) -> Attempt:
        self.tree.finish_attempt(attempt.id, "submitted", "submitted")
        self.tree.set_outcome(attempt.id, 0.0, diagnostics(), "+ an added line\n" * 5_000)
        return self.tree.attempt(attempt.id)


def diagnostics() -> dict[str, Any]:
    """A verifier's findings with many failing tests and a long log."""
    tests = [
        {"name": f"tests/test_build.py::test_{n}", "outcome": "failed", "message": "E " * 2_000}
        for n in range(40)
    ]
    return {
        "summary": "0 of 40 tests passed",
        "tests": tests,
        "log_tail": "the verifier's log goes on\n" * 2_000,
    }
