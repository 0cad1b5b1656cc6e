"""The `sprout` agent loop: verl's samples of one prompt are one sprout training group.

verl (0.9) asks an agent loop for one trajectory per sample, `rollout.n` samples per
prompt, and calls `run(sampling_params, **row)` for each. This loop reads the task the
row names (`rows.row_task`), meets the prompt's other samples at their group's rendezvous
(`group.Group`), and returns its slot's rollout of the group, which the leading sample
played (`play.play_group`) on verl's servers through `server_manager`, with token ids,
so every rollout is on-policy and token-exact. The sandboxes and the reward are sprout's.

verl builds the loop from its agent-loop config (`agent_loop_config_path`; the keys
beside `name` and `_target_` are `LoopSettings`), or by the registered name `sprout`.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from omegaconf import Container, OmegaConf
from pydantic import ValidationError
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    _agent_loop_registry,
    register,
)

from sprout.errors import SproutError
from sprout.integrations.verl.group import Group
from sprout.integrations.verl.outputs import Lengths, Played, slot_outputs
from sprout.integrations.verl.play import LoopSettings, play_group
from sprout.integrations.verl.rows import row_task
from sprout.integrations.verl.server import VerlServer
from sprout.models.token_server import TokenServerModel
from sprout.search import Progress

LOOP_NAME = "sprout"


class VerlLoopError(SproutError, ValueError):
    """verl settings the loop cannot play groups under."""


class SproutAgentLoop(AgentLoopBase):
    """One sample of a prompt's group (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        mine = [key for key in kwargs if key in LoopSettings.model_fields]
        own = {key: _plain(kwargs.pop(key)) for key in mine}
        super().__init__(*args, **kwargs)
        try:
            self.settings = LoopSettings(**own)
        except ValidationError as error:
            wrong = error.errors()[0]
            where = ".".join(str(part) for part in wrong["loc"])
            raise VerlLoopError(
                f"the agent-loop config's `{LOOP_NAME}` entry: {where}: {wrong['msg']}"
            ) from None
        self.size = self.settings.method().group_size
        self.lengths = Lengths(
            self.rollout_config.prompt_length, self.rollout_config.response_length
        )
        self.runs = Path(self.settings.runs)
        self._check_n()

    def _check_n(self) -> None:
        """`rollout.n` (and validation's `val_kwargs.n`, when verl validates) must be the
        group's size: the group needs every one of its samples."""
        settings = self.settings
        group = f"roots {settings.roots} x (1 + children {settings.children}) = {self.size}"
        found = {"actor_rollout_ref.rollout.n": self.rollout_config.n}
        trainer = self.config.get("trainer", {})
        if trainer.get("val_before_train", False) or (trainer.get("test_freq", -1) or -1) > 0:
            found["actor_rollout_ref.rollout.val_kwargs.n"] = self.rollout_config.val_kwargs.n
        for key, n in found.items():
            if n != self.size:
                raise VerlLoopError(
                    f"{key}={n}: the sprout agent loop plays groups of {group} samples; set "
                    f"{key}={self.size} (or change roots and children in the agent-loop config)"
                )

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """This sample's rollout of its prompt's group."""
        task = row_task(kwargs["sprout_task"])
        group = Group(str(kwargs["uid"]), self.size)
        slot = await group.claim()
        if slot is None:
            raise VerlLoopError(
                f"task {task.id}: more than actor_rollout_ref.rollout.n={self.size} samples "
                "of one prompt reached the sprout agent loop"
            )
        if slot.leads:
            self._lead(group, task, sampling_params, kwargs)
        fields = await group.output(slot)
        return _output(fields)

    def _lead(
        self, group: Group, task: Any, sampling_params: dict[str, Any], row: dict[str, Any]
    ) -> None:
        """Start playing the group on a thread of its own (a search runs for minutes, and
        verl's default executor is shared); its outputs, or its failure for every slot, are
        published from this event loop."""
        loop = asyncio.get_running_loop()
        folder = self.runs / f"{task.id}-{group.uid}"
        server = VerlServer(
            self.server_manager,
            self.tokenizer,
            self.model_name,
            loop,
            sampling_params=sampling_params,
            context_tokens=self.lengths.prompt + self.lengths.response,
        )
        model = TokenServerModel(
            f"verl/{self.model_name}", server, max_tokens=self.settings.reply_tokens
        )
        progress = Progress(tag=f"verl {group.uid[:8]}")

        def outputs(played: list[Played], prompt_ids: list[int]) -> list[dict[str, Any]]:
            return slot_outputs(
                played,
                prompt_ids=prompt_ids,
                end_of_turn=server.end_of_turn(),
                lengths=self.lengths,
                logprobs=bool(sampling_params.get("logprobs")),
                run=str(folder),
            )

        def play() -> None:
            """Publishes in every case: the group's other samples wait for it."""
            try:
                prompt = server.encode(server.render(list(row["raw_prompt"])))
                found = outputs(play_group(task, self.settings, model, folder, progress), prompt)
            except Exception as error:  # a crash of sprout's ends the group in error
                why = f"the group could not be played: {type(error).__name__}: {error}"
                found = outputs([Played(None, why, None, None, None)] * self.size, [])
            asyncio.run_coroutine_threadsafe(group.publish(found), loop).result()

        threading.Thread(target=play, name=f"sprout-group-{group.uid}", daemon=True).start()

    @property
    def model_name(self) -> str:
        """The served model's name: its folder's."""
        return Path(str(self.config.actor_rollout_ref.model.path)).name


if LOOP_NAME not in _agent_loop_registry:  # an agent-loop config's entry, with its settings, stays
    register(LOOP_NAME)(SproutAgentLoop)


def _plain(value: Any) -> Any:
    """A setting as hydra hands it (a table is an OmegaConf node), as plain Python."""
    return OmegaConf.to_container(value) if isinstance(value, Container) else value


def _output(fields: dict[str, Any]) -> AgentLoopOutput:
    metrics = AgentLoopMetrics(**fields.pop("metrics"))
    return AgentLoopOutput(**fields, metrics=metrics)
