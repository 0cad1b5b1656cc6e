"""mini-swe-agent's agent config, as far as it decides what the actor sends, parses and ends.

`sprout run --agent-config` reads a mini-swe-agent YAML config (`sprout.integrations`
does the reading, with mini-swe-agent's own defaults) into these settings; the actor
then plays mini-swe-agent's protocol (`mini_dialect.py`) instead of its own. Kept as
plain data in the actor's config, so a run stores them with its settings and
`--resume` plays the same protocol without the YAML file.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MINI_SUBMIT_SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""What mini-swe-agent's environments take as the submission: the first line of a call's
output, with exit code 0 (fixed in its environments, not a config key)."""


class MiniSweAgentSettings(BaseModel):
    """The parts of a mini-swe-agent config that shape the conversation; the limits it
    shares with sprout (`step_limit`, `wall_time_limit_seconds`, the environment's
    `timeout`) are set on the actor's own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system_template: str
    """`agent.system_template`: the first message."""
    instance_template: str
    """`agent.instance_template`: the task message; `task` is the task's instruction."""
    observation_template: str
    """`model.observation_template`: one message per call, given `output` (`output`,
    `returncode`, `exception_info`)."""
    format_error_template: str
    """`model.format_error_template`: the reply to a turn whose calls cannot be read."""
    action_regex: str | None = None
    """`model.action_regex` of a text-based model class (exactly one match per reply);
    None for the tool-call model classes, which call `bash_tool`."""
    bash_tool: dict[str, Any] | None = None
    """mini-swe-agent's `bash` tool definition, read from the installed package; None for
    the text-based model classes, which are offered no tool."""
    cwd: str = ""
    """`environment.cwd`: where each call runs; empty for the task's working directory."""
    env: dict[str, str] = Field(default_factory=dict)
    """`environment.env`: variables set for every call."""
    max_consecutive_format_errors: int = Field(3, ge=0)
    """`agent.max_consecutive_format_errors`: this many in a row end the attempt (0: never)."""
    cost_limit: float = 0.0
    """`agent.cost_limit`, kept for the record: sprout's model clients report tokens, not
    dollars, so no cost is known to reach it (docs/integrations.md)."""
    template_vars: dict[str, Any] = Field(default_factory=dict)
    """What mini-swe-agent's `DefaultAgent.get_template_vars` merges before its counters and
    the task: the agent, environment and model sections with their defaults, and the
    machine's `platform.uname()` (the sandbox shares its kernel)."""
    source: str = ""
    """The specs the settings were read from (`mini:swebench`, a file), for the record."""
