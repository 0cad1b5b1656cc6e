"""The actor loop: ask the model for a turn, run its calls, seal a checkpoint, commit, repeat.

One linear message list per attempt; with no persistent shell, the whole state
at a turn boundary is (messages, counters) plus the sandbox's filesystem, and
both are committed when the turn ends. So `run` resumes any attempt, killed or
new, from its last committed turn: a branch is just an attempt whose first
turns are inherited.

With a model that keeps token ids (`hf/PATH`), each turn also records the ids
it added to the context, and the model is given the stored ids of the path so
far: a branch continues from its parent's exact tokens, never re-rendered.

The actor knows the sandbox only as a `Workspace` (fork, check and run a call,
seal), and the run only as the tree's verbs. It times its turns with the `Clock` it is
given, so a test drives the wall-time limit with a fake clock instead of sleeping.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from sprout.agent.config import ActorConfig
from sprout.agent.parse import BASH_TOOL, FormatError, check_commands, parse_calls
from sprout.agent.prompts import render
from sprout.agent.state import AttemptState, Clock, Reply, TurnIds
from sprout.models import Completion, Model, ModelError, token_model
from sprout.models.fingerprint import TOKENIZER_META, check_tokenizer
from sprout.tree import (
    Attempt,
    AttemptStatus,
    CallRecord,
    Fault,
    Message,
    ModelCallRecord,
    RolloutTree,
    TreeError,
    Turn,
)
from sprout.workspace import CallOutput, CheckpointLost, Fork, Sealed, Workspace, WorkspaceError


class AttemptEnded(Exception):
    """Control flow that ends an attempt, carrying the status, the reason and (for status
    `error`) the fault to record."""

    def __init__(self, status: AttemptStatus, reason: str, fault: Fault | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.fault = fault


class Interrupted(Exception):
    """The run is stopping (Ctrl-C, a server that fails every call): the attempt stays
    `running` at its last committed turn, for `--resume`."""


class Actor:
    """Plays attempts of one model in one workspace, recording into a tree."""

    def __init__(
        self,
        model: Model,
        tree: RolloutTree,
        workspace: Workspace,
        config: ActorConfig | None = None,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        """`workspace` is where calls run: `sprout.sandbox.SandboxWorkspace` over the run's
        layers, or any other `sprout.workspace.Workspace`. `clock` times each turn, its
        model call included, against `config.max_wall_s`."""
        self.model = model
        self.tree = tree
        self.workspace = workspace
        self.config = config or ActorConfig()
        self.clock = clock
        self.tokens = token_model(model)
        """The model again when it keeps token ids exact, else None."""
        if self.tokens is not None:
            self._claim_tokenizer(record=False)

    def _claim_tokenizer(self, *, record: bool) -> None:
        """Refuse a run whose stored token ids another tokenizer made; record ours (`record`)
        when the run has none yet."""
        assert self.tokens is not None
        fingerprint = self.tokens.tokenizer_fingerprint()
        stored = self.tree.get_meta(TOKENIZER_META)
        check_tokenizer(stored, fingerprint, where=str(self.tree.database))
        if record and stored is None:
            self.tree.set_meta(TOKENIZER_META, fingerprint)

    def _render(self, name: str, **context: Any) -> str:
        config = self.config
        return render(
            name,
            config.templates.model_dump(exclude_none=True),
            call_format=config.call_format,
            max_calls=config.max_calls_per_turn,
            submit_sentinel=config.submit_sentinel,
            **context,
        )

    def prefix(self, instruction: str, workdir: str) -> list[Message]:
        """The messages before a root's first turn: the system prompt and the task."""
        return [
            {"role": "system", "content": self._render("system", workdir=workdir)},
            {
                "role": "user",
                "content": self._render("instance", instruction=instruction, workdir=workdir),
            },
        ]

    def run(
        self,
        attempt: Attempt | int,
        *,
        should_stop: Callable[[], bool] | None = None,
        interrupted: Callable[[], bool] | None = None,
    ) -> Attempt:
        """Play `attempt` from its last committed turn until it submits or hits a limit.

        `should_stop` is asked before every model call: a schedule that has
        its pass ends the attempts still running instead of paying for them.
        `interrupted` is asked at the same places: when it says so, the attempt
        is left `running` after its last committed turn, as a kill would leave it.

        Nothing the model or the workspace does escapes as an exception: a reply
        that cannot be run is a format error the model sees, and a server that
        gives no reply, a broken sandbox or a crash of sprout itself ends the
        attempt `error` with its `fault`, never as a failure of the model.
        """
        attempt = self.tree.attempt(attempt if isinstance(attempt, int) else attempt.id)
        if attempt.status != "running":
            return attempt
        if self.tokens is not None:
            self._claim_tokenizer(record=True)
        state = AttemptState(attempt, self.tree.messages(attempt), self.tree.last_index(attempt))
        try:
            # the stored ids of the context so far; None when the model keeps none
            state.ids = self._stored_ids(attempt, state.index)
            own = self.tree.own_turns(attempt)
            if own:  # killed after committing its submitting turn, before recording the end
                self._check_submitted(own[-1])
            self._count_stored(state, own)
            with self.workspace.fork(self.tree.checkpoint(attempt, state.index)) as fork:
                if attempt.starting_turn is not None and state.index == attempt.boundary:
                    self._play(fork, state, self._starting_reply(state, attempt.starting_turn))
                while True:
                    if interrupted is not None and interrupted():
                        raise Interrupted()
                    if should_stop is not None and should_stop():
                        raise AttemptEnded("stopped", "stopped: another attempt passed")
                    self._check_limits(state)
                    self._play(fork, state, self._next_reply(state))
        except Interrupted:
            pass
        except AttemptEnded as ended:
            self.tree.finish_attempt(attempt.id, ended.status, ended.reason, fault=ended.fault)
        except WorkspaceError as error:  # a checkpoint lost with its node, or the sandbox
            fault: Fault = "lost" if isinstance(error, CheckpointLost) else "sandbox"
            self.tree.finish_attempt(attempt.id, "error", f"sandbox: {error}", fault=fault)
        except Exception as error:  # a bug of sprout's must not look like the model's failure
            reason = crash_reason(error, f"turn {state.index + 1}")
            self.tree.finish_attempt(attempt.id, "error", reason, fault="harness")
        return self.tree.attempt(attempt.id)

    def _count_stored(self, state: AttemptState, own: Sequence[Turn]) -> None:
        """The running totals of what the store already holds: read once per `run`."""
        calls = self.tree.model_calls(attempt_id=state.attempt.id)
        state.spent = sum(call.prompt_tokens + call.completion_tokens for call in calls)
        asked = [t for t in self.tree.path(state.attempt) if t.prompt_tokens or t.completion_tokens]
        state.context = asked[-1].prompt_tokens + asked[-1].completion_tokens if asked else 0
        state.elapsed = sum(turn.duration_s for turn in own)

    def _starting_reply(self, state: AttemptState, text: str) -> Reply:
        """A branch's starting turn, played as the reviewer wrote it, in the actor's voice."""
        ids = self._reviewer_ids(state.messages, state.ids, text)
        return Reply("reviewer", text, self.clock(), ids=ids)

    def _next_reply(self, state: AttemptState) -> Reply:
        """The model's next turn, timed from before its call: the model's time is the turn's."""
        started = self.clock()
        completion = self._ask(state)
        ids = self._actor_ids(completion, state.ids)
        return Reply("actor", completion.text, started, completion, ids)

    def _stored_ids(self, attempt: Attempt, index: int) -> list[int] | None:
        """The context's token ids up to turn `index`'s reply, from the store."""
        if self.tokens is None:
            return None
        try:
            path = self.tree.token_path(attempt, index)
        except TreeError as error:
            raise AttemptEnded("error", str(error), "harness") from None
        return [i for context, completion, _ in path for i in (*context, *completion)]

    def _reviewer_ids(
        self, messages: list[Message], ids: list[int] | None, text: str
    ) -> TurnIds | None:
        """A starting turn's ids: the context it follows, and its text as a model reply."""
        if self.tokens is None or ids is None:
            return None
        try:
            return self.tokens.context_ids(messages, ids), self.tokens.encode_reply(text), None
        except ModelError as error:
            raise AttemptEnded("error", f"model {self.model.name}: {error}", "model") from None

    def _actor_ids(self, completion: Completion, ids: list[int] | None) -> TurnIds | None:
        """A reply's ids: what its prompt held beyond the stored `ids`, and what it generated."""
        if ids is None:
            return None
        prompt, reply = completion.prompt_ids, completion.completion_ids
        if prompt is None or reply is None or list(prompt[: len(ids)]) != ids:
            raise AttemptEnded(
                "error",
                f"model {self.model.name}: its prompt ids do not extend the context's stored ids",
                "model",
            )
        tokens = completion.logprobs
        logprobs = (
            tuple(t.logprob for t in tokens) if tokens and len(tokens) == len(reply) else None
        )
        return prompt[len(ids) :], reply, logprobs

    def _ask(self, state: AttemptState) -> Completion:
        """The model's next reply to the context, its call recorded and counted."""
        config = self.config
        attempt, index = state.attempt, state.index + 1
        options: dict[str, Any] = {
            "temperature": config.temperature,
            "logprobs": config.logprobs,
            "tools": [BASH_TOOL] if config.call_format == "tool_calls" else None,
            "seed": self.tree.sample_seed(attempt, index) if config.seeded else None,
        }
        try:
            if self.tokens is not None and state.ids is not None:
                completion = self.tokens.complete(state.messages, prefix_ids=state.ids, **options)
            else:
                completion = self.model.complete(state.messages, **options)
        except ModelError as error:
            raise AttemptEnded("error", f"model {self.model.name}: {error}", "model") from None
        self.tree.record_call(
            ModelCallRecord(
                role="actor",
                task_id=attempt.task_id,
                attempt_id=attempt.id,
                turn_index=index,
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens,
                cached_tokens=completion.cached_tokens,
                estimated=completion.estimated,
                latency_s=completion.latency_s,
                method=attempt.method,
            )
        )
        state.spent += completion.prompt_tokens + completion.completion_tokens
        return completion

    def _check_limits(self, state: AttemptState) -> None:
        """End the attempt before the next model call when a limit is reached; the
        reason names the setting to raise."""
        config = self.config
        if state.index >= config.max_turns:
            raise AttemptEnded(
                "limit", f"turn limit (max_turns): {state.index} of {config.max_turns} turns"
            )
        if config.max_tokens is not None and state.spent >= config.max_tokens:
            raise AttemptEnded(
                "limit", f"token limit (max_tokens): {state.spent} of {config.max_tokens} spent"
            )
        if config.max_context_tokens is not None and state.context >= config.max_context_tokens:
            raise AttemptEnded(
                "limit",
                f"context limit (max_context_tokens): {state.context} of "
                f"{config.max_context_tokens} tokens",
            )
        if config.max_wall_s is not None and state.elapsed >= config.max_wall_s:
            raise AttemptEnded(
                "limit",
                f"wall-time limit (max_wall_s): {state.elapsed:.1f} s of {config.max_wall_s:g} s",
            )

    def _play(self, fork: Fork, state: AttemptState, reply: Reply) -> None:
        """Run one turn's calls in `fork`, seal its checkpoint and commit it."""
        records, added = self._run_calls(fork, reply)
        sealed = fork.seal()
        turn = self._turn(state, reply, records, added, sealed)
        self.tree.commit_turn(turn)
        state.played(turn, added, reply.ids)
        self._check_submitted(turn)

    def _run_calls(self, fork: Fork, reply: Reply) -> tuple[list[CallRecord], list[Message]]:
        """The records of `reply`'s calls, run in `fork`, and the messages the turn adds: the
        reply and its observations, or, when no call can run, the reply and the format error
        the model is shown instead (nothing runs, so the checkpoint stays its parent's)."""
        config = self.config
        message: Message = {"role": "assistant", "content": reply.text}
        try:
            calls = parse_calls(
                reply.completion,
                reply.text,
                call_format=config.call_format,
                max_calls=config.max_calls_per_turn,
            )
            check_commands(fork, [command for command, _ in calls])
        except FormatError as error:
            problem = self._render("format_error", problem=str(error))
            return [], [message, {"role": "user", "content": problem}]
        records = [
            _record(command, fork.run(command, timeout=config.call_timeout_s))
            for command, _ in calls
        ]
        return records, self._observation_messages(message, calls, records)

    def _turn(
        self,
        state: AttemptState,
        reply: Reply,
        records: list[CallRecord],
        added: list[Message],
        sealed: Sealed,
    ) -> Turn:
        """The turn to commit: what `reply` ran and added, its tokens as the model reported
        them, and its duration by the actor's clock from the model call to the seal."""
        completion = reply.completion
        tokens = completion.logprobs if completion is not None else None
        ids = reply.ids
        return Turn(
            attempt_id=state.attempt.id,
            index=state.index + 1,
            author=reply.author,
            text=reply.text,
            calls=tuple(records),
            messages=tuple(added),
            checkpoint=sealed.checkpoint,
            prompt_tokens=completion.prompt_tokens if completion else 0,
            completion_tokens=completion.completion_tokens if completion else 0,
            cached_tokens=completion.cached_tokens if completion else None,
            estimated=completion.estimated if completion else False,
            entropy=sum(t.entropy() for t in tokens) / len(tokens) if tokens else None,
            duration_s=self.clock() - reply.started,
            format_error=not records,
            context_ids=ids[0] if ids else None,
            completion_ids=ids[1] if ids else None,
            completion_logprobs=ids[2] if ids else None,
            changes=sealed.changes,
        )

    def _check_submitted(self, turn: Turn) -> None:
        """End the attempt when `turn` printed the submit sentinel first in a call's output."""
        sentinel = self.config.submit_sentinel
        if any(c.output.lstrip().partition("\n")[0].strip() == sentinel for c in turn.calls):
            raise AttemptEnded("submitted", f"turn {turn.index} printed {sentinel}")

    def _observation_messages(
        self, reply: Message, calls: list[tuple[str, str | None]], records: list[CallRecord]
    ) -> list[Message]:
        """The reply and its observations, as the model's protocol expects them."""
        if all(call_id is not None for _, call_id in calls):
            reply["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                }
                for command, call_id in calls
            ]
            return [reply] + [
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": self._render("observation", calls=[record]),
                }
                for (_, call_id), record in zip(calls, records, strict=True)
            ]
        return [reply, {"role": "user", "content": self._render("observation", calls=records)}]


def _record(command: str, observation: CallOutput) -> CallRecord:
    """What the tree keeps of one call that ran."""
    seen = observation
    return CallRecord(
        command, seen.output, seen.exit_code, seen.timed_out, seen.truncated, seen.duration_s
    )


def crash_reason(error: BaseException, where: str) -> str:
    """What to record of a crash of sprout itself `where` (`turn 3`, `schedule`): the
    error, then the traceback's last frames, so the bug can be reported without a rerun."""
    frames = traceback.format_exception(type(error), error, error.__traceback__)
    trace = "".join(frames[-4:-1]).rstrip()[-1500:]
    return f"sprout crashed in {where}: {type(error).__name__}: {error}\n{trace}"
