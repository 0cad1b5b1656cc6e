"""The actor loop: ask the model for a turn, run its calls, seal a checkpoint, commit, repeat.

One linear message list per attempt; with no persistent shell, the whole state
at a turn boundary is (messages, counters) plus the sandbox's filesystem, and
both are committed together, once the turn's checkpoint is on disk: a sealed turn
is held while the next model call is made (its flush runs meanwhile), and
committed before the next turn is, or before the attempt's end is recorded. So
`run` resumes any attempt, killed or new, from its last committed turn: a branch
is just an attempt whose first turns are inherited.

This module is the loop; what it plays a turn with lives beside it: `state.py`
(the context and running totals), `token_ids.py` (the token-exact record of each
model call, for a model that keeps ids), `parse.py` (the calls in a reply),
`call_formats.py` (how calls and observations are written into the context),
`limits.py` and `ending.py` (when and how an attempt stops), `turn_records.py`
(what the tree keeps of a turn) and `prompts.py` (the templates).

The actor knows the sandbox only as a `Workspace` (fork, check and run a call,
seal), and the run only as the tree's verbs. It times its turns with the `Clock` it is
given, so a test drives the wall-time limit with a fake clock instead of sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sprout.agent.config import ActorConfig
from sprout.agent.dialect import dialect_for
from sprout.agent.ending import AttemptEnded, Interrupted, crash_reason, model_failed
from sprout.agent.limits import check_limits
from sprout.agent.parse import FormatError, check_commands
from sprout.agent.state import AttemptState, Clock, Reply, TurnClock
from sprout.agent.token_ids import TokenIds
from sprout.agent.turn_records import call_record, model_call_record, turn_record
from sprout.models import Completion, Model, ModelError
from sprout.models.window import context_window
from sprout.tree import Attempt, CallRecord, Fault, Message, RolloutTree, Turn
from sprout.workspace import CheckpointLost, Fork, Workspace, WorkspaceError


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
        self.token_ids = TokenIds(model, tree)
        self.dialect = dialect_for(self.config, keeps_ids=self.token_ids.tokens is not None)

    def prefix(self, instruction: str, workdir: str) -> list[Message]:
        """The messages before a root's first turn: the system prompt and the task."""
        return self.dialect.prefix(instruction, workdir)

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
        self.token_ids.claim_tokenizer(record=True)
        state = AttemptState(attempt, self.tree.messages(attempt), self.tree.last_index(attempt))
        try:
            self._play_turns(state, should_stop, interrupted)
        except Interrupted:
            pass
        except AttemptEnded as ended:
            self.tree.finish_attempt(attempt.id, ended.status, ended.reason, fault=ended.fault)
        except WorkspaceError as error:  # a checkpoint lost with its node, or the sandbox
            fault: Fault = "lost" if isinstance(error, CheckpointLost) else "sandbox"
            self.tree.finish_attempt(attempt.id, "error", f"sandbox: {error}", fault=fault)
        except Exception as error:  # a bug of sprout's must not look like the model's failure
            reason = crash_reason(error, f"turn {state.index + 1}")
            self.tree.finish_attempt(attempt.id, "error", reason, fault="sprout")
        return self.tree.attempt(attempt.id)

    def _play_turns(
        self,
        state: AttemptState,
        should_stop: Callable[[], bool] | None,
        interrupted: Callable[[], bool] | None,
    ) -> None:
        """Play turns until the attempt ends: an exception says how (see `run`). Whichever
        way it goes out, the turn held since its seal is committed first, so that an end is
        recorded after the last turn played."""
        attempt = state.attempt
        try:
            # the stored ids of the context so far; None when the model keeps none
            state.ids = self.token_ids.stored(attempt, state.index)
            own = self.tree.own_turns(attempt)
            if own:  # killed after committing its submitting turn, before recording the end
                self.dialect.check_submitted(own[-1])
            self._count_stored(state, own)
            window = context_window(self.model)
            with self.workspace.fork(self.tree.checkpoint(attempt, state.index)) as fork:
                if attempt.starting_turn is not None and state.index == attempt.boundary:
                    self._play(fork, state, self._starting_reply(state, attempt.starting_turn))
                while True:
                    if interrupted is not None and interrupted():
                        raise Interrupted()
                    if should_stop is not None and should_stop():
                        raise AttemptEnded("stopped", "stopped: another attempt passed")
                    check_limits(self.config, state, window)
                    self._play(fork, state, self._next_reply(state))
        except Exception:
            self._commit_held(state)
            raise

    def _count_stored(self, state: AttemptState, own: Sequence[Turn]) -> None:
        """The running totals of what the run database already holds: read once per `run`."""
        calls = self.tree.model_calls(attempt_id=state.attempt.id)
        state.spent = sum(call.prompt_tokens + call.completion_tokens for call in calls)
        asked = [t for t in self.tree.path(state.attempt) if t.prompt_tokens or t.completion_tokens]
        state.context = asked[-1].prompt_tokens + asked[-1].completion_tokens if asked else 0
        state.elapsed = sum(turn.duration_s for turn in own)
        state.format_errors = next(
            (i for i, turn in enumerate(reversed(own)) if not turn.format_error), len(own)
        )

    def _starting_reply(self, state: AttemptState, text: str) -> Reply:
        """A branch's starting turn, played as the reviewer wrote it, in the actor's voice."""
        ids = self.token_ids.of_starting_turn(state.messages, state.ids, text)
        return Reply("reviewer", text, self.clock(), ids=ids)

    def _next_reply(self, state: AttemptState) -> Reply:
        """The model's next turn, timed from before its call: the model's time is the turn's."""
        started = self.clock()
        completion = self._ask(state)
        ids = self.token_ids.of_reply(completion, state.ids)
        return Reply("actor", completion.text, started, completion, ids)

    def _ask(self, state: AttemptState) -> Completion:
        """The model's next reply to the context, its call recorded and counted."""
        config = self.config
        attempt, index = state.attempt, state.index + 1
        options: dict[str, Any] = {
            "temperature": config.temperature,
            "logprobs": config.logprobs,
            "tools": self.dialect.tools(),
            "seed": self.tree.sample_seed(attempt, index) if config.seeded else None,
        }
        try:
            completion = self.token_ids.complete(state.messages, state.ids, **options)
        except ModelError as error:
            if error.kind == "context":  # the prompt outgrew the model's window: its limit
                raise AttemptEnded("limit", f"context limit: {error}") from None
            raise model_failed(self.model.name, error) from None
        self.tree.record_call(model_call_record(attempt, index, completion))
        state.spent += completion.prompt_tokens + completion.completion_tokens
        return completion

    def _play(self, fork: Fork, state: AttemptState, reply: Reply) -> None:
        """Run one turn's calls in `fork` and seal its checkpoint; the turn is held, not
        committed: the tree records a checkpoint only once it is on disk, and its flush
        runs while the next model call is made (the turn is committed when `reply`, that
        call's answer, comes to be played, or as the attempt ends)."""
        self._commit_held(state)
        records, added = self._run_calls(fork, state, reply)
        sealed = fork.seal()
        turn = turn_record(state, reply, records, added, sealed, self.clock() - reply.started)
        state.held = turn
        state.played(turn, added, reply.ids)
        self.dialect.check_submitted(turn)

    def _commit_held(self, state: AttemptState) -> None:
        """Commit the turn held since its seal (the tree waits for its checkpoint to be on
        disk: a failed flush is a WorkspaceError, the sandbox's fault, never the model's)."""
        if state.held is not None:
            turn, state.held = state.held, None
            self.tree.commit_turn(turn)

    def _run_calls(
        self, fork: Fork, state: AttemptState, reply: Reply
    ) -> tuple[list[CallRecord], list[Message]]:
        """The records of `reply`'s calls, run in `fork`, and the messages the turn after
        `state` adds: the reply and its observations, or, when no call can run, the format
        error the model is shown instead (nothing runs, so the checkpoint stays its parent's)."""
        dialect = self.dialect
        try:
            calls = dialect.calls(reply.completion, reply.text)
            commands = [dialect.command(command) for command, _ in calls]
            check_commands(fork, commands)
        except FormatError as error:
            return [], dialect.format_error_messages(reply.text, reply.completion, error)
        records: list[CallRecord] = []
        for (command, _), run in zip(calls, commands, strict=True):
            records.append(call_record(command, fork.run(run, timeout=self.config.call_timeout_s)))
            if dialect.stops_turn(records[-1]):
                break
        at = TurnClock(state.index + 1, state.elapsed + self.clock() - reply.started)
        return records, dialect.turn_messages(reply.text, calls, records, at)
