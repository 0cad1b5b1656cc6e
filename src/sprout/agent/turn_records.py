"""What the tree keeps of a turn the actor played: the `Turn`, the `CallRecord` of each
call it ran, and the `ModelCallRecord` of its model call.

Each is built field by field from what the turn produced (the reply, the calls' output,
the sealed checkpoint, the completion's counts and token ids). Kept out of the loop so
that the loop reads as the steps of a turn, and what each recorded field holds is read
in one place.
"""

from __future__ import annotations

from sprout.agent.state import AttemptState, Reply
from sprout.models import Completion
from sprout.tree import Attempt, CallRecord, Message, ModelCallRecord, Turn
from sprout.workspace import CallOutput, Sealed


def call_record(command: str, observation: CallOutput) -> CallRecord:
    """What the tree keeps of one call that ran."""
    seen = observation
    return CallRecord(
        command, seen.output, seen.exit_code, seen.timed_out, seen.truncated, seen.duration_s
    )


def model_call_record(attempt: Attempt, index: int, completion: Completion) -> ModelCallRecord:
    """What the tree keeps of the actor's model call for turn `index` of `attempt`."""
    return ModelCallRecord(
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


def turn_record(
    state: AttemptState,
    reply: Reply,
    records: list[CallRecord],
    added: list[Message],
    sealed: Sealed,
    duration_s: float,
) -> Turn:
    """The turn to commit after `state`'s last: what `reply` ran and added, its tokens as
    the model reported them, and its `duration_s` by the actor's clock."""
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
        duration_s=duration_s,
        format_error=not records,
        context_ids=ids[0] if ids else None,
        completion_ids=ids[1] if ids else None,
        completion_logprobs=ids[2] if ids else None,
        changes=sealed.changes,
    )
