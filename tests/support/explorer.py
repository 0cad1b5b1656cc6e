"""A scripted explorer for tests/support/taskfolders.py's `long_task`, to serve through
tests/support/fake_token_server.py: a function of the prompt's text, as a model is.

Shown an actor's prompt, it explores: one command a turn, each printing thousands of lines
of which it keeps the tail (`output_bytes` bytes), for `explore_turns` turns (it counts the
assistant turns in its prompt); then it writes the wrong count (the mistake, made late)
and submits. Once its context holds the verifier's finding about answer.txt (a reviewer's
starting turn, the heuristic's or a model's), it writes the right count next and submits.
Shown a role's prompt (the analyst's, reviewer's or supervisor's, told apart by how
roles/templates/ open), it answers in prose, not the JSON asked for, so the role falls
back. `role_prompts` reads, from the server's record, each role prompt's length in the
tokenizer's ids.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tests.support.fake_token_server import FakeTokenServer
from tests.support.scripted_model import bash, submit
from tests.support.taskfolders import LONG_RECORDS

ROLES = ("analyst", "reviewer", "supervisor")
ASSISTANT = "<|im_start|>assistant"
"""How the tiny model's chat template opens an assistant turn."""
FINDING = "answer.txt: expected"
"""What the verifier's finding says, and so the warning a starting turn repeats."""
RIGHT = "wc -l < data/records.log > answer.txt"
WRONG = f"echo {LONG_RECORDS - 1} > answer.txt"


def role_of(prompt: str) -> str:
    """'actor', or the role whose template opened `prompt`."""
    for role in ROLES:
        if f"You are the {role}." in prompt:
            return role
    return "actor"


@dataclass
class Explorer:
    explore_turns: int
    output_bytes: int
    calls: Counter[str] = field(default_factory=Counter)
    """Prompts shown, by role ('actor' for the actor's)."""

    def __call__(self, prompt: str) -> str:
        role = role_of(prompt)
        self.calls[role] += 1
        if role != "actor":
            return "I would rather explain this in prose than in JSON."
        return self.actor_turn(prompt)

    def actor_turn(self, prompt: str) -> str:
        warned = prompt.rfind(FINDING)
        if warned >= 0:
            return submit() if RIGHT in prompt[warned:] else bash(RIGHT, thought="Fix the count.")
        done = prompt.count(ASSISTANT) - 1  # the last one opens the reply asked for
        if done < self.explore_turns:
            part = done + 1
            command = f"grep -n line data/part-{part}.log | tail -c {self.output_bytes}"
            return bash(command, thought=f"Read part {part}.")
        if WRONG not in prompt:
            return bash(WRONG, thought="That is the count.")
        return submit()


OPENING = 400
"""Tokens at a prompt's start that hold a role template's first line."""


def role_prompts(fake: FakeTokenServer) -> list[tuple[str, int]]:
    """(role, its prompt's length in ids) for each role prompt `fake` was sent."""
    found = [(role_of(fake.decode(ids[:OPENING])), len(ids)) for ids in fake.prompts]
    return [(role, size) for role, size in found if role != "actor"]
