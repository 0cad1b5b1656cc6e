"""The token-exact record of an attempt: the token ids each model call saw and wrote.

A model that keeps token ids (`hf/PATH`, `vllm/`, `sglang/`, `llamacpp/`) is trained
on the very ids it sampled, and tokenizing the messages again need not give them back
(a text has more than one tokenization, and a chat template may render it otherwise).
So each turn records the ids it added to the context: what its prompt held beyond the
stored ids so far, the ids it generated and their log-probabilities. The next model
call is given the stored ids of the path so far, so a branch continues from its
parent's exact tokens; and the run records its tokenizer, so no other adds to it.

This is kept apart from the actor's loop, which plays a plain chat model the same way:
with a model that keeps no ids every answer here is None.
"""

from __future__ import annotations

from typing import Any

from sprout.agent.ending import AttemptEnded, model_failed
from sprout.models import Completion, Message, Model, ModelError, token_model
from sprout.models.fingerprint import check_tokenizer
from sprout.tree import Attempt, RolloutTree, RunMeta, TokenizerFingerprint, TreeError

TurnIds = tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...] | None]
"""A turn's (context_ids, completion_ids, completion_logprobs)."""


def extend(ids: list[int] | None, turn: TurnIds | None) -> list[int] | None:
    """The stored context `ids` after a turn that added `turn`."""
    return None if ids is None or turn is None else [*ids, *turn[0], *turn[1]]


class TokenIds:
    """The token-id bookkeeping of one actor's model in one run. With a model that keeps
    no ids, `tokens` is None: nothing is claimed, every ids answer is None and `complete`
    is the plain chat call, so the loop never asks which kind of model it plays."""

    def __init__(self, model: Model, tree: RolloutTree) -> None:
        """Refuses a run whose stored ids another tokenizer made (`claim_tokenizer`)."""
        self.model = model
        self.tree = tree
        self.tokens = token_model(model)
        """The model again when it keeps token ids exact, else None."""
        self.claim_tokenizer(record=False)

    def claim_tokenizer(self, *, record: bool) -> None:
        """Refuse a run whose stored token ids another tokenizer made; record ours (`record`)
        when the run has none yet. A model that keeps no ids claims nothing."""
        if self.tokens is None:
            return
        fingerprint = self.tokens.tokenizer_fingerprint()
        stored = self.tree.meta().tokenizer_json()
        check_tokenizer(stored, fingerprint, where=str(self.tree.database))
        if record and stored is None:
            tokenizer = TokenizerFingerprint.model_validate(fingerprint)
            self.tree.update_meta(RunMeta(tokenizer=tokenizer))

    def stored(self, attempt: Attempt, index: int) -> list[int] | None:
        """The context's token ids up to turn `index`'s reply, from the tree."""
        if self.tokens is None:
            return None
        try:
            path = self.tree.token_path(attempt, index)
        except TreeError as error:
            raise AttemptEnded("error", str(error), "sprout") from None
        return [i for context, completion, _ in path for i in (*context, *completion)]

    def complete(
        self, messages: list[Message], ids: list[int] | None, **options: Any
    ) -> Completion:
        """The model's reply to `messages`, continued from the stored `ids` when it keeps
        them: only what the messages add after them is rendered."""
        if self.tokens is not None and ids is not None:
            return self.tokens.complete(messages, prefix_ids=ids, **options)
        return self.model.complete(messages, **options)

    def of_starting_turn(
        self, messages: list[Message], ids: list[int] | None, text: str
    ) -> TurnIds | None:
        """A starting turn's ids: the context it follows, and its text as a model reply."""
        if self.tokens is None or ids is None:
            return None
        try:
            return self.tokens.context_ids(messages, ids), self.tokens.encode_reply(text), None
        except ModelError as error:
            raise model_failed(self.model.name, error) from None

    def of_reply(self, completion: Completion, ids: list[int] | None) -> TurnIds | None:
        """A reply's ids: what its prompt held beyond the stored `ids`, and what it generated."""
        if ids is None:
            return None
        prompt, reply = completion.prompt_ids, completion.completion_ids
        if prompt is None or reply is None or list(prompt[: len(ids)]) != ids:
            problem = "its prompt ids do not extend the context's stored ids"
            raise model_failed(self.model.name, problem)
        tokens = completion.logprobs
        logprobs = (
            tuple(t.logprob for t in tokens) if tokens and len(tokens) == len(reply) else None
        )
        return prompt[len(ids) :], reply, logprobs
