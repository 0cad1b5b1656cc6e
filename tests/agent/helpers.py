"""Shared pieces of the actor, tree and store tests: a scripted model and a world to run it in.

The model is deterministic and records what it was shown; everything else (the
sandbox, the SQLite store, the tree) is the real thing.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sprout.agent import Actor, ActorConfig
from sprout.agent.state import Clock
from sprout.models import Choice, Completion, Message, TokenLogprob, ToolCall
from sprout.rundb import RunDatabase
from sprout.sandbox import LayerStore, Limits, Sandbox, SandboxWorkspace
from sprout.tree import Attempt, RolloutTree

SUBMIT = "SPROUT_SUBMIT"

LISTING = (
    "cd /workspace && find . -mindepth 1 -printf '%y %m %p\\n' | sort && "
    "find . -type f -print0 | sort -z | xargs -0 -r sha256sum"
)
"""One shell call that prints every path under /workspace (type, mode) and each file's hash."""


def bash(*commands: str, thought: str = "Next step.") -> str:
    """A reply in the default format: a thought, then one fenced ```bash block per command."""
    blocks = "".join(f"```bash\n{command}\n```\n" for command in commands)
    return f"{thought}\n\n{blocks}"


def submit() -> str:
    """A reply whose only call prints the default submit sentinel."""
    return bash(f"echo {SUBMIT}", thought="Done.")


def reply(
    text: str = "",
    *,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    tool_calls: Iterable[ToolCall] = (),
    logprobs: tuple[TokenLogprob, ...] | None = None,
) -> Completion:
    """A completion as a server would return it, with fixed token counts."""
    return Completion(
        choices=(Choice(text, "stop", tuple(tool_calls), logprobs),),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


class ScriptedModel:
    """Returns scripted replies in order (a str, a Completion, or an exception to raise) and
    records a private copy of every message list and keyword it was called with."""

    def __init__(self, replies: Iterable[str | Completion | BaseException], name: str = "scripted"):
        self.name = name
        self.replies: deque[str | Completion | BaseException] = deque(replies)
        self.seen: list[list[Message]] = []
        self.calls: list[dict[str, Any]] = []

    def complete(
        self,
        messages: list[Message],
        *,
        n: int = 1,
        temperature: float | None = None,
        logprobs: bool = False,
        tools: list[dict[str, Any]] | None = None,
        seed: int | None = None,
    ) -> Completion:
        self.seen.append(json.loads(json.dumps(messages)))
        self.calls.append(
            {"n": n, "temperature": temperature, "logprobs": logprobs, "tools": tools, "seed": seed}
        )
        if not self.replies:
            raise AssertionError(f"the script ran out: call {len(self.seen)} was not scripted")
        item = self.replies.popleft()
        if isinstance(item, BaseException):
            raise item
        return item if isinstance(item, Completion) else reply(item)


@dataclass
class FakeClock:
    """A clock that stands still until a test moves it: time passes only where the test says
    (a model that thinks for ten seconds), never with the machine's speed."""

    now: float = 0.0

    def __call__(self) -> float:
        return self.now


class SlowModel(ScriptedModel):
    """A scripted model that takes `seconds` of `clock` over every reply."""

    def __init__(
        self, replies: Iterable[str | Completion | BaseException], clock: FakeClock, seconds: float
    ) -> None:
        super().__init__(replies)
        self.clock = clock
        self.seconds = seconds

    def complete(self, messages: list[Message], **options: Any) -> Completion:
        self.clock.now += self.seconds
        return super().complete(messages, **options)


@dataclass
class World:
    """One run's layer store, SQLite store and tree, with one task's untouched checkpoint."""

    layers: LayerStore
    store: RunDatabase
    tree: RolloutTree
    base: str
    task_id: str
    workdir: str = "/workspace"

    def actor(
        self, model: Any, config: ActorConfig | None = None, clock: Clock = time.monotonic
    ) -> Actor:
        return Actor(model, self.tree, SandboxWorkspace(self.layers), config, clock=clock)

    def root(self, actor: Actor, instruction: str = "Fix it.") -> Attempt:
        """A new root attempt of the world's task, with `actor`'s prompts."""
        return self.tree.root(self.task_id, actor.prefix(instruction, self.workdir), self.base)

    def play(
        self, replies: Iterable[str | Completion | BaseException], config: ActorConfig | None = None
    ) -> tuple[Attempt, ScriptedModel]:
        """A root attempt played to its end by a scripted model; (attempt, model)."""
        model = ScriptedModel(replies)
        actor = self.actor(model, config)
        return actor.run(self.root(actor)), model

    def shell(self, checkpoint: str, command: str) -> str:
        """What `command` prints in a fresh fork of `checkpoint` (the fork is thrown away)."""
        with Sandbox.fork(self.layers, checkpoint) as sandbox:
            observation = sandbox.run(command, timeout=30)
        assert observation.exit_code == 0, observation.output
        return observation.output


def make_world(
    layers: LayerStore,
    path: Path,
    *,
    files: dict[str, str] | None = None,
    limits: Limits | None = None,
    task_id: str = "t1",
) -> World:
    """A world whose task holds `files` (relative path -> text) in /workspace."""
    source = path / "task-files"
    source.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {}).items():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    with Sandbox.create(layers, files=source, limits=limits) as sandbox:
        base = sandbox.parent
    store = RunDatabase(path / "sprout.db")
    tree = RolloutTree(store)
    tree.add_task(task_id, {"instruction": "Fix it."})
    return World(layers, store, tree, base, task_id)


def dumps(messages: list[Message]) -> str:
    """Messages as bytes on the wire: equal strings mean byte-for-byte equal contexts."""
    return json.dumps(messages, sort_keys=False, ensure_ascii=False)
