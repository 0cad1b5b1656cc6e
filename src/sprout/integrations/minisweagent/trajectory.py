"""mini-swe-agent's trajectory files (`*.traj.json`) read as attempts a sprout run adopts.

`sprout run --method sprout --from-trajectories DIR` branches a failed mini-swe-agent
run: each trajectory under DIR becomes a root of its task (matched by the file's
`instance_id`, as `mini-extra swebench` writes it, else by the file name), turn by turn,
and `sprout.search.imported` makes its checkpoints by running its commands again.

A trajectory of the format mini-swe-agent 2.x writes (`mini-swe-agent-1.1`) holds, after
the system and instance messages, per step: the model's message with the actions parsed
from it (`extra.actions`), then one observation per action with the raw output and exit
code (`extra.raw_output`, `extra.returncode`); or, for a reply it refused, the
format-error message alone, with the reply in `extra.response` or `extra.model_response`;
and last an `exit` message with the exit status. Each step is one turn, its messages in
the shape sprout's mini-swe-agent dialect records (no `extra`), so a branch continues the
context as mini-swe-agent would have.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sprout.agent.call_formats import reply_message
from sprout.agent.mini_settings import MINI_SUBMIT_SENTINEL
from sprout.errors import SproutError
from sprout.search.imported import ImportedRoot, ImportedTurn
from sprout.tree import AttemptStatus, CallRecord, Fault, Message

SUFFIX = ".traj.json"
FORMAT = "mini-swe-agent-1.1"
LIMIT_EXITS = frozenset({"LimitsExceeded", "TimeExceeded", "RepeatedFormatError"})
"""mini-swe-agent's exit statuses for an agent its limits stopped: sprout's `limit`."""
AGENT_EXITS = LIMIT_EXITS | {"Submitted"}
"""The exit statuses of an agent that ran to its end; any other is an exception's name."""
API_KEYS = ("role", "content", "tool_call_id", "name")
"""What of an observation message a model is sent (mini-swe-agent drops `extra` too)."""


class TrajectoryError(SproutError, ValueError):
    """A trajectory file sprout cannot adopt: one line naming the file and what is wrong."""


def find_trajectories(directory: Path) -> list[Path]:
    """The trajectory files under `directory` (mini-extra's `ID/ID.traj.json` or flat)."""
    if not directory.is_dir():
        raise TrajectoryError(f"--from-trajectories {directory}: not a directory")
    found = sorted(directory.rglob(f"*{SUFFIX}"))
    if not found:
        raise TrajectoryError(f"--from-trajectories {directory}: no *{SUFFIX} file under it")
    return found


def imported_roots(directory: Path, task_ids: Sequence[str]) -> dict[str, list[ImportedRoot]]:
    """Every trajectory under `directory` read as a root of one of `task_ids`, by task."""
    roots: dict[str, list[ImportedRoot]] = {}
    for path in find_trajectories(directory):
        root = read_trajectory(path, task_ids)
        roots.setdefault(root.task_id, []).append(root)
    return roots


def read_trajectory(path: Path, task_ids: Sequence[str]) -> ImportedRoot:
    """The attempt of one trajectory file, for the task among `task_ids` it names."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TrajectoryError(f"{path}: not a readable JSON file: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise TrajectoryError(f"{path}: messages: missing (not a mini-swe-agent trajectory)")
    if data.get("trajectory_format") != FORMAT:
        raise TrajectoryError(
            f"{path}: trajectory_format: {data.get('trajectory_format')!r}, expected "
            f"{FORMAT!r} (mini-swe-agent 2.x)"
        )
    task_id = _task_id(path, data, task_ids)
    try:
        return _Reader(path, data["messages"]).root(task_id)
    except (KeyError, TypeError, AttributeError, IndexError) as error:
        raise TrajectoryError(
            f"{path}: messages: not as mini-swe-agent writes them ({error!r})"
        ) from None


def _task_id(path: Path, data: Mapping[str, Any], task_ids: Sequence[str]) -> str:
    named = data.get("instance_id") or path.name.removesuffix(SUFFIX)
    if named not in task_ids:
        raise TrajectoryError(
            f"{path}: instance_id: {named!r} is none of the run's tasks "
            f"({', '.join(task_ids) or 'none'})"
        )
    return str(named)


class _Reader:
    """One trajectory's messages read step by step into turns."""

    def __init__(self, path: Path, messages: list[dict[str, Any]]) -> None:
        self.path = path
        self.messages = messages
        self.at = 0
        self.turns: list[ImportedTurn] = []

    def root(self, task_id: str) -> ImportedRoot:
        prefix = self._prefix()
        while self.at < len(self.messages):
            message = self.messages[self.at]
            role = message["role"]
            if role == "exit":
                return self._ended(task_id, prefix, message)
            if role == "assistant":
                self._step(message)
            elif _extra(message).get("interrupt_type") == "FormatError":
                self._format_error(message)
            else:
                raise TrajectoryError(
                    f"{self.path}: messages[{self.at}]: a {role} message that is no "
                    "observation, format error or exit (an interactive session?)"
                )
        return ImportedRoot(task_id, str(self.path), prefix, tuple(self.turns), "running")

    def _prefix(self) -> tuple[Message, ...]:
        """The system and instance messages: everything before the first step."""
        roles = [m["role"] for m in self.messages[:2]]
        if roles != ["system", "user"]:
            raise TrajectoryError(
                f"{self.path}: messages: start with {roles}, expected the system and "
                "instance messages"
            )
        self.at = 2
        return tuple(_sent(m) for m in self.messages[:2])

    def _step(self, reply: dict[str, Any]) -> None:
        """A reply, its actions, and the observations of those that ran."""
        actions = _extra(reply)["actions"]
        calls = [(str(a["command"]), a.get("tool_call_id")) for a in actions]
        self.at += 1
        observations: list[Message] = []
        records: list[CallRecord] = []
        for command, _ in calls:
            if self.at >= len(self.messages) or "raw_output" not in _extra(self.messages[self.at]):
                break
            observation = self.messages[self.at]
            observations.append(_sent(observation))
            if not _unexecuted(observation):
                records.append(_record(command, _extra(observation)))
            self.at += 1
        if len(observations) < len(calls):
            records.append(self._submitted(calls, len(observations)))
        text = _text(reply.get("content"))
        usage = _usage(_extra(reply).get("response"))
        self.turns.append(
            ImportedTurn(
                text,
                tuple(records),
                (reply_message(text, calls), *observations),
                prompt_tokens=usage[0],
                completion_tokens=usage[1],
            )
        )

    def _submitted(self, calls: list[tuple[str, str | None]], ran: int) -> CallRecord:
        """The call a step without all its observations ended on: it must be the submit that
        ends the trajectory, and the first call whose observation is missing (an earlier
        one's output is nowhere in the file, so its replay could not be checked): the only
        such call, or one that names the sentinel itself."""
        ending = self.messages[self.at] if self.at < len(self.messages) else {}
        extra = _extra(ending)
        command = calls[ran][0]
        known = len(calls) - ran == 1 or MINI_SUBMIT_SENTINEL in command
        if extra.get("exit_status") != "Submitted" or not known:
            raise TrajectoryError(
                f"{self.path}: messages[{self.at}]: step {len(self.turns) + 1} has "
                f"{len(calls) - ran} of {len(calls)} calls without an observation, and its "
                "output is recorded nowhere else, so its replay could not be checked"
            )
        output = f"{MINI_SUBMIT_SENTINEL}\n{extra.get('submission') or ''}"
        return CallRecord(command, output, 0)

    def _format_error(self, message: dict[str, Any]) -> None:
        """A reply mini-swe-agent refused: only the format error stays in its context."""
        extra = _extra(message)
        text = extra.get("model_response")
        if text is None:
            text = _response_text(extra.get("response"))
        usage = _usage(extra.get("response"))
        self.turns.append(
            ImportedTurn(
                str(text or ""),
                (),
                (_sent(message),),
                format_error=True,
                prompt_tokens=usage[0],
                completion_tokens=usage[1],
            )
        )
        self.at += 1

    def _ended(
        self, task_id: str, prefix: tuple[Message, ...], message: dict[str, Any]
    ) -> ImportedRoot:
        exit_status = str(_extra(message).get("exit_status") or "")
        status, fault, reason = agent_end(exit_status, _extra(message))
        reason = f"mini-swe-agent: {reason}"
        return ImportedRoot(
            task_id, str(self.path), prefix, tuple(self.turns), status, reason, fault
        )


def agent_end(
    exit_status: str, extra: Mapping[str, Any]
) -> tuple[AttemptStatus, Fault | None, str]:
    """sprout's end of an attempt mini-swe-agent ended with `exit_status` (`extra` may hold
    the exception's text): a crash of its model or harness is no failure of the model's,
    so it is an `error`."""
    if exit_status == "Submitted":
        return "submitted", None, "Submitted"
    if exit_status in LIMIT_EXITS:
        return "limit", None, exit_status
    said = str(extra.get("exception_str") or "")
    return "error", "sprout", f"{exit_status or 'no exit status'}: {said}".rstrip(": ")


def _extra(message: Mapping[str, Any]) -> dict[str, Any]:
    extra = message.get("extra")
    return extra if isinstance(extra, dict) else {}


def _sent(message: Mapping[str, Any]) -> Message:
    """A message as a model is sent it: without mini-swe-agent's `extra`."""
    return {key: message[key] for key in API_KEYS if key in message}


def _unexecuted(observation: Mapping[str, Any]) -> bool:
    """mini-swe-agent's observation of a tool call its step left unrun."""
    extra = _extra(observation)
    return extra.get("returncode") == -1 and extra.get("exception_info") == (
        "action was not executed"
    )


def _record(command: str, extra: Mapping[str, Any]) -> CallRecord:
    """One call that ran, as mini-swe-agent's environment returned it: a timeout is its
    `TimeoutExpired` (exit code -1)."""
    output = str(extra.get("raw_output") or "")
    if extra.get("exception_type") == "TimeoutExpired":
        return CallRecord(command, output, None, timed_out=True)
    return CallRecord(command, output, int(extra["returncode"]))


def _text(content: object) -> str:
    """A message's text: a string, or the text parts of a multimodal list."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _response_text(response: object) -> str:
    if not isinstance(response, dict):
        return ""
    choices = response.get("choices") or [{}]
    return _text((choices[0].get("message") or {}).get("content"))


def _usage(response: object) -> tuple[int, int]:
    """The prompt and completion tokens the model server reported for the step, or 0."""
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return 0, 0
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
