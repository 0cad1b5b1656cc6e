"""A world to play attempts in: one run's layer store and rollout tree, with one task's
untouched checkpoint; the sandbox and the tree (and its SQLite file) are the real thing."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sprout.agent import Actor, ActorConfig
from sprout.agent.state import Clock
from sprout.models import Completion
from sprout.sandbox import LayerStore, Limits, Sandbox, SandboxWorkspace
from sprout.tree import Attempt, RolloutTree
from tests.support.scripted_model import ScriptedModel

LISTING = (
    "cd /workspace && find . -mindepth 1 -printf '%y %m %p\\n' | sort && "
    "find . -type f -print0 | sort -z | xargs -0 -r sha256sum"
)
"""One shell call that prints every path under /workspace (type, mode) and each file's hash."""


@dataclass
class World:
    """One run's layer store and rollout tree (its SQLite file), with one task's untouched
    checkpoint."""

    layers: LayerStore
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
    tree = RolloutTree(path / "sprout.db")
    tree.add_task(task_id, {"instruction": "Fix it."})
    return World(layers, tree, base, task_id)
