"""A rollout tree with synthetic token ids, written straight into a tree (no model, no sandbox).

`family` makes one task's group (ids, parent at boundary, reward):

    1 root, 3 turns: 0          2 root, 2 turns: 0
    3 of 1 at 1, guided: 1      4 of 1 at 0, unguided: 0

Every first turn's context is the prompt (10, 11, 12); a later turn's context is one id
standing for the previous observation and the generation prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sprout.tree import Attempt, RolloutTree, Turn

TASK = "two-edits"
METHOD = "train-rollouts"
PROMPT = (10, 11, 12)
STARTING = "Let me redo step 2 properly.\n\n```bash\necho 2 > b.txt\n```"


class TreeBuilder:
    """Adds attempts and turns with given ids to a fresh tree."""

    def __init__(self, folder: Path, task: str = TASK) -> None:
        self.tree = RolloutTree(folder / "sprout.db")
        self.task = task
        self.tree.add_task(task, {})

    def root(self) -> Attempt:
        prefix = [
            {"role": "system", "content": "You are a careful engineer."},
            {"role": "user", "content": "Put 1 in a.txt and 2 in b.txt."},
        ]
        return self.tree.root(self.task, prefix, "base", method=METHOD)

    def branch(self, parent: Attempt, boundary: int, starting_turn: str | None = None) -> Attempt:
        return self.tree.branch(parent, boundary, starting_turn, method=METHOD)

    def turn(
        self,
        attempt: Attempt,
        index: int,
        context: Sequence[int] | None,
        completion: Sequence[int] | None,
        *,
        logprobs: Sequence[float] | None = None,
        author: str = "actor",
        text: str | None = None,
    ) -> None:
        text = text or f"turn {index} of attempt {attempt.id}"
        self.tree.commit_turn(
            Turn(
                attempt_id=attempt.id,
                index=index,
                author=author,  # type: ignore[arg-type]
                text=text,
                calls=(),
                messages=(
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": f"output of turn {index}"},
                ),
                checkpoint=f"layer-{attempt.id}-{index}",
                context_ids=None if context is None else tuple(context),
                completion_ids=None if completion is None else tuple(completion),
                completion_logprobs=None if logprobs is None else tuple(logprobs),
            )
        )

    def finish(self, attempt: Attempt, reward: float) -> None:
        self.tree.finish_attempt(attempt.id, "submitted", "submitted")
        self.tree.set_outcome(attempt.id, reward, {"summary": "tests ran"}, None)


def family(folder: Path) -> TreeBuilder:
    """The group of the module docstring, every attempt finished and verified."""
    build = TreeBuilder(folder)
    one = build.root()
    build.turn(one, 1, PROMPT, (20, 21), logprobs=(-0.1, -0.2))
    build.turn(one, 2, (13,), (22, 23), logprobs=(-0.3, -0.4))
    build.turn(one, 3, (14,), (24,), logprobs=(-0.5,))
    build.finish(one, 0.0)
    two = build.root()
    build.turn(two, 1, PROMPT, (30,), logprobs=(-0.6,))
    build.turn(two, 2, (15,), (31, 32), logprobs=(-0.7, -0.8))
    build.finish(two, 0.0)
    three = build.branch(one, 1, STARTING)
    build.turn(three, 2, (13,), (40, 41, 42), author="reviewer", text=STARTING)
    build.turn(three, 3, (16,), (43,), logprobs=(-0.9,))
    build.finish(three, 1.0)
    four = build.branch(one, 0)
    build.turn(four, 1, PROMPT, (50, 51), logprobs=(-1.0, -1.1))
    build.finish(four, 0.0)
    return build
