"""The actor's settings: limits, call format, prompts. Loadable from a TOML file."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from sprout.agent.mini_settings import MiniSweAgentSettings
from sprout.agent.prompts import VARIABLES
from sprout.config import check_template, read_table


class TemplateOverrides(BaseModel):
    """Jinja sources that replace the packaged templates of the same name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: str | None = None
    """The system prompt: how to call the shell, how to submit."""
    instance: str | None = None
    """The task message: `instruction`, `workdir`."""
    observation: str | None = None
    """What the model sees after its calls: `calls` (command, output, exit_code, ...)."""
    format_error: str | None = None
    """The reply to a turn with no call or too many: `problem`."""

    @field_validator("*")
    @classmethod
    def _parses(cls, source: str | None, info: ValidationInfo) -> str | None:
        assert info.field_name is not None
        return check_template(source, VARIABLES[info.field_name])


class ActorConfig(BaseModel):
    """How the actor talks to the model and when an attempt ends."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_format: Literal["bash_blocks", "tool_calls"] = "bash_blocks"
    """Fenced ```bash blocks in the reply (default), or OpenAI tool calls to one `bash` tool."""
    max_calls_per_turn: int = Field(4, ge=1)
    """More calls than this in one reply is a format error (the turn still counts)."""
    call_timeout_s: float = Field(120.0, gt=0)
    """Timeout of each shell call."""
    submit_sentinel: str = Field("SPROUT_SUBMIT", min_length=1)
    """A call whose output's first line is this ends the attempt as submitted."""
    max_turns: int = Field(50, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    """Tokens spent by this attempt's model calls (prompt + completion)."""
    max_context_tokens: int | None = Field(None, ge=1)
    """The longest context (prompt + reply) a call may reach."""
    max_wall_s: float | None = Field(None, gt=0)
    """Wall time of the attempt's turns, model calls included."""
    max_format_errors_in_a_row: int | None = Field(None, ge=1)
    """This many turns in a row whose calls could not be read end the attempt (None: never)."""
    temperature: float | None = None
    logprobs: bool = False
    """Ask for per-token log-probabilities (needed by the entropy schedule)."""
    seeded: bool = True
    """Send each call a seed named by its place in the tree (task, attempt lineage, turn):
    a backend that honours seeds then samples a resumed run as it sampled the first."""
    templates: TemplateOverrides = Field(default_factory=lambda: TemplateOverrides())
    """Replacements for the packaged Jinja templates."""
    mini_swe_agent: MiniSweAgentSettings | None = None
    """Speak mini-swe-agent's protocol instead of sprout's (`--agent-config`, read by
    `sprout.integrations.minisweagent`); `templates` then do not apply."""

    @classmethod
    def from_file(cls, path: str | Path) -> ActorConfig:
        """Read the `[actor]` table of a TOML file; errors name the file and the field."""
        return read_table(path, "actor", cls)
