"""Asking a role's model for structured output: bounded retries, then the heuristic.

One flow for both roles. A reply that `read` refuses is answered with the exact
problem and asked again, at most `max_retries` times; a last refusal, a prompt
that cannot fit the model's window (`sprout.roles.fit`), or a request the model
refuses as built (HTTP 400, or a prompt over its context), hands over to the
heuristic, with the reason recorded and told (`on_fallback`).
A server that gives no reply at all is a fault, not a refusal: its `ModelError`
goes up to the schedule, which records the pair as an error. A model whose
capabilities say it writes no structured output (the oracles) goes straight to
the heuristic, and is charged what a real model would have been: estimated
tokens of the prompt and of the JSON the heuristic produced. Every call is
recorded, retries included.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sprout.models import Completion, Model, ModelError, capabilities
from sprout.models.estimate import estimate_tokens
from sprout.roles.output import OutputError
from sprout.roles.prompts import render
from sprout.roles.views import head
from sprout.tree import Message, ModelCallRecord, Role, RolloutTree

T = TypeVar("T")

REFUSALS = ("bad_request", "context")
"""Kinds of `ModelError` that refuse the request as built, not a server's fault: the
heuristic answers, where a fault ends the pair in error."""
ECHO_CHARS = 4_000
"""A refused reply is sent back (so the model sees what it wrote) cut to this size."""


@dataclass(frozen=True)
class Recorder:
    """Records one role's model calls for token accounting, and tells its fallbacks."""

    tree: RolloutTree
    role: Role
    task_id: str
    attempt_id: int | None
    method: str
    """The schedule the call serves, so that methods are charged apart."""
    on_fallback: Callable[[str], None] | None = None
    """Told why, when the heuristic takes over from a model that could not answer."""

    def real(self, completion: Completion) -> None:
        self._add(
            completion.prompt_tokens,
            completion.completion_tokens,
            completion.cached_tokens,
            completion.estimated,
            completion.latency_s,
        )

    def estimate(self, messages: list[Message], reply: str) -> None:
        prompt = "".join(m["content"] for m in messages if isinstance(m.get("content"), str))
        self._add(estimate_tokens(prompt), estimate_tokens(reply), None, True, 0.0)

    def _add(
        self, prompt: int, completion: int, cached: int | None, estimated: bool, latency: float
    ) -> None:
        self.tree.record_call(
            ModelCallRecord(
                role=self.role,
                task_id=self.task_id,
                attempt_id=self.attempt_id,
                turn_index=None,
                prompt_tokens=prompt,
                completion_tokens=completion,
                cached_tokens=cached,
                estimated=estimated,
                latency_s=latency,
                method=self.method,
            )
        )


class Refused(Exception):
    """No usable reply: the model failed or every reply was refused; the message says which."""


def consult(
    model: Model,
    prompt: Callable[[], str],
    *,
    read: Callable[[str], T],
    heuristic: Callable[[str], T],
    as_reply: Callable[[T], dict[str, Any]],
    recorder: Recorder,
    max_retries: int,
) -> T:
    """The model's answer to the prompt `prompt()` builds, as `read` parses it, or
    `heuristic(reason)` (a prompt that cannot be built to fit is refused with `Refused`).

    `as_reply` turns a heuristic answer into the JSON a model would have written,
    for the token estimate of a model that writes no structured output.
    """
    can = capabilities(model)
    if not can.structured_output:
        replays = "replays a reference solution and " if can.replays_solution else ""
        answer = heuristic(f"{model.name} {replays}writes no analyses or reviews")
        messages: list[Message] = [{"role": "user", "content": prompt()}]
        recorder.estimate(messages, json.dumps(as_reply(answer)))
        return answer
    try:
        return _ask(model, [{"role": "user", "content": prompt()}], read, recorder, max_retries)
    except Refused as refused:
        if recorder.on_fallback is not None:
            recorder.on_fallback(str(refused))
        return heuristic(str(refused))


def _ask(
    model: Model,
    messages: list[Message],
    read: Callable[[str], T],
    recorder: Recorder,
    max_retries: int,
) -> T:
    problems: list[str] = []
    for number in range(1, max_retries + 2):
        try:
            completion = model.complete(messages)
        except ModelError as error:
            if error.kind not in REFUSALS:
                raise
            raise Refused(f"request refused on try {number}: {error}") from None
        recorder.real(completion)
        try:
            return read(completion.text)
        except OutputError as problem:
            problems.append(str(problem))
            messages += [
                {"role": "assistant", "content": head(completion.text, ECHO_CHARS)},
                {"role": "user", "content": render("retry", problem=str(problem))},
            ]
    count = f"{len(problems)} repl{'y' if len(problems) == 1 else 'ies'}"
    raise Refused(f"{count} refused (max_retries={max_retries}); last: {problems[-1]}")
