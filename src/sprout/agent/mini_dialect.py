"""mini-swe-agent's protocol, spoken by sprout's actor (`--agent-config`).

The same messages mini-swe-agent's `DefaultAgent` sends with the same config, turn by
turn: its system and instance templates, one observation message per call (a `tool`
message answering its id with the tool-call model classes, a `user` message with the
text-based ones), its format-error template, and its rules for reading calls (exactly
one `action_regex` match per reply; or calls of its `bash` tool) and for submitting (a
call whose output's first line is `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`, exit code 0,
after which the turn's later calls do not run). `tests/integrations` holds the two
conversations side by side against one loopback server.

Where sprout keeps more than mini-swe-agent does, it says so: a reply that breaks the
format leaves only the format error in a chat model's context, as in mini-swe-agent,
but stays in it for a model trained on its exact token ids, whose context ids hold the
reply's tokens; the turn itself is recorded either way.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from jinja2 import StrictUndefined, Template

from sprout.agent.call_formats import reply_message
from sprout.agent.config import ActorConfig
from sprout.agent.ending import AttemptEnded
from sprout.agent.mini_settings import MINI_SUBMIT_SENTINEL, MiniSweAgentSettings
from sprout.agent.parse import Calls, FormatError
from sprout.agent.state import TurnClock
from sprout.fences import shell_blocks
from sprout.models import Completion
from sprout.tree import CallRecord, Message, Turn

NOT_EXECUTED = {"output": "", "returncode": -1, "exception_info": "action was not executed"}
"""mini-swe-agent's observation of a tool call its turn left unrun."""


class MiniFormatError(FormatError):
    """A reply mini-swe-agent would refuse, with what its format-error template is given."""

    def __init__(self, error: str, **template_kwargs: Any) -> None:
        super().__init__(error)
        self.template_kwargs = template_kwargs


@cache
def _template(source: str) -> Template:
    """A config's template, compiled once per process rather than at every turn."""
    template: Template = Template(source, undefined=StrictUndefined)
    return template


def _render(source: str, **variables: Any) -> str:
    """A template as mini-swe-agent renders it: a plain Jinja template, strict."""
    return str(_template(source).render(**variables))


def submits(record: CallRecord) -> bool:
    """mini-swe-agent's rule: the sentinel first in the output, and exit code 0."""
    lines = record.output.lstrip().splitlines()
    return bool(lines) and lines[0].strip() == MINI_SUBMIT_SENTINEL and record.exit_code == 0


def in_environment(command: str, cwd: str, env: Mapping[str, str]) -> str:
    """`command` in `cwd` with `env`, as mini-swe-agent's environments start each call
    (`docker exec -w CWD -e K=V`)."""
    lines = [f"export {key}={shlex.quote(value)}" for key, value in env.items()]
    if cwd:
        lines.append(f"cd {shlex.quote(cwd)} || exit")
    return "\n".join([*lines, command])


def mini_output(record: CallRecord, timeout_s: float) -> dict[str, Any]:
    """A call's result in the shape mini-swe-agent's environments return."""
    if record.timed_out or record.exit_code is None:
        why = f"the command timed out after {timeout_s:g} seconds"
        return {
            "output": record.output,
            "returncode": -1,
            "exception_info": f"An error occurred while executing the command: {why}",
            "extra": {"exception_type": "TimeoutExpired", "exception": why},
        }
    return {"output": record.output, "returncode": record.exit_code, "exception_info": ""}


class MiniSweAgentDialect:
    """mini-swe-agent's conversation with one config's templates and rules."""

    def __init__(
        self, config: ActorConfig, settings: MiniSweAgentSettings, *, keeps_ids: bool
    ) -> None:
        self.config = config
        self.settings = settings
        self.keeps_ids = keeps_ids

    def _variables(self, at: TurnClock, **more: Any) -> dict[str, Any]:
        """`DefaultAgent.get_template_vars` `at` a turn: the config's sections, then its
        counters (sprout knows no cost: 0.0), then what the caller adds."""
        counters = {
            "n_model_calls": at.index,
            "model_cost": 0.0,
            "elapsed_seconds": int(at.elapsed_s),
        }
        return {**self.settings.template_vars, **counters, **more}

    def prefix(self, instruction: str, workdir: str) -> list[Message]:
        """The system message and the instance message, `task` the instruction."""
        variables = self._variables(TurnClock(0, 0.0), task=instruction)
        settings = self.settings
        return [
            {"role": "system", "content": _render(settings.system_template, **variables)},
            {"role": "user", "content": _render(settings.instance_template, **variables)},
        ]

    def tools(self) -> list[dict[str, Any]] | None:
        """mini-swe-agent's own `bash` tool, as read from the installed package."""
        tool = self.settings.bash_tool
        return [tool] if tool is not None else None

    def calls(self, completion: Completion | None, text: str) -> Calls:
        """By the config's model class: exactly one `action_regex` match, or its tool calls.
        A reviewer's starting turn (no completion) may be written in fenced bash blocks."""
        regex = self.settings.action_regex
        finish = completion.choices[0].finish_reason if completion is not None else None
        if completion is not None and regex is None:
            return self._tool_calls(completion, finish)
        actions = [a.strip() for a in re.findall(regex, text, re.DOTALL)] if regex else []
        if completion is None and not actions:  # the reviewer's voice
            actions = shell_blocks(text)
        if not actions or (regex is not None and len(actions) != 1):
            error = f"Expected exactly 1 action, found {len(actions)}."
            raise MiniFormatError(error, actions=actions, finish_reason=finish)
        return [(action, None) for action in actions]

    def _tool_calls(self, completion: Completion, finish: str | None) -> Calls:
        """mini-swe-agent's `parse_toolcall_actions`, its error texts included."""
        tool_calls = completion.tool_calls
        if not tool_calls:
            error = (
                "No tool calls found in the response. Every response MUST include at "
                "least one tool call."
            )
            raise MiniFormatError(error, actions=[], has_tool_calls=False, finish_reason=finish)
        calls: Calls = []
        for call in tool_calls:
            error = ""
            if call.problem is not None:
                error = f"Error parsing tool call arguments: {call.problem}."
            if call.name != "bash":
                error += f"Unknown tool '{call.name}'."
            command = call.arguments.get("command")
            if call.problem is None and not isinstance(command, str):
                error += "Missing 'command' argument in bash tool call."
            if error:
                raise MiniFormatError(
                    error.strip(), actions=[], has_tool_calls=True, finish_reason=finish
                )
            calls.append((str(command), call.id))
        return calls

    def command(self, command: str) -> str:
        """`command` in the config's `cwd` with its `env` (`in_environment`)."""
        return in_environment(command, self.settings.cwd, self.settings.env)

    def stops_turn(self, record: CallRecord) -> bool:
        """A submitting call ends the turn: mini-swe-agent runs no later action."""
        return submits(record)

    def turn_messages(
        self, text: str, calls: Calls, records: Sequence[CallRecord], at: TurnClock
    ) -> list[Message]:
        """The reply, then one observation per call (mini-swe-agent's `format_*observation_
        messages`): a `tool` message per tool call, a `user` message per text action."""
        outputs = [mini_output(r, self.config.call_timeout_s) for r in records]
        outputs += [NOT_EXECUTED] * (len(calls) - len(records))
        variables = self._variables(at)
        observations: list[Message] = []
        for (_, call_id), output in zip(calls, outputs, strict=True):
            content = _render(self.settings.observation_template, output=output, **variables)
            if call_id is None:
                observations.append({"role": "user", "content": content})
            else:
                observations.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return [reply_message(text, calls), *observations]

    def format_error_messages(
        self, text: str, completion: Completion | None, error: FormatError
    ) -> list[Message]:
        """mini-swe-agent's format error: the template given the actions found, the error and
        the reply's finish reason. A chat model's context does not keep the refused reply."""
        kwargs = dict(error.template_kwargs) if isinstance(error, MiniFormatError) else {}
        kwargs.setdefault("actions", [])
        if self.settings.action_regex is None:
            kwargs.setdefault("has_tool_calls", bool(completion and completion.tool_calls))
        content = _render(self.settings.format_error_template, error=str(error), **kwargs)
        message: Message = {"role": "user", "content": content}
        if self.keeps_ids:
            return [{"role": "assistant", "content": text}, message]
        return [message]

    def check_submitted(self, turn: Turn) -> None:
        """The attempt is over once a call of `turn` submitted by mini-swe-agent's rule."""
        if any(submits(call) for call in turn.calls):
            reason = f"turn {turn.index} printed {MINI_SUBMIT_SENTINEL} (exit code 0)"
            raise AttemptEnded("submitted", reason)
