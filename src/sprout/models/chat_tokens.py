"""The ids a conversation adds after a stored context: one rule for every token-exact model.

A branch continues from its parent's stored ids; only what the new messages
add after them is rendered and tokenized. That delta is the rendered
conversation (generation prompt included) minus the decoded prefix, so it also
holds whatever closing text the template puts after a reply that the model did
not generate (the newline after ChatML's ``<|im_end|>``, or the whole end of
turn when a reply hit the token limit). A template that renders earlier
messages differently once more follow (one that drops earlier reasoning, say)
is refused rather than silently retokenised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sprout.models.types import Message, ModelError


class TextTokenizer(Protocol):
    """Where a conversation becomes text and text becomes ids: local files or a server."""

    def render(self, messages: list[Message]) -> str:
        """`messages` through the chat template, generation prompt included."""
        ...

    def encode(self, text: str) -> list[int]:
        """`text` as ids, special-token text included, nothing added around it."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """Exactly the text of `ids`, special tokens included."""
        ...


def added_ids(
    tokenizer: TextTokenizer, name: str, messages: list[Message], prefix_ids: Sequence[int]
) -> tuple[int, ...]:
    """The ids `messages` add after the stored context `prefix_ids` (see the module's doc);
    a `ModelError` naming where they differ when the stored ids are not a prefix."""
    rendered = tokenizer.render(messages)
    held = tokenizer.decode(prefix_ids) if prefix_ids else ""
    if not rendered.startswith(held):
        at = next(
            (i for i, (a, b) in enumerate(zip(held, rendered, strict=False)) if a != b),
            min(len(held), len(rendered)),
        )
        raise ModelError(
            "template",
            f"{name}: the stored context ids do not decode to a prefix of the rendered "
            f"conversation (they differ at character {at}: stored "
            f"{held[at : at + 40]!r}, rendered {rendered[at : at + 40]!r}); token-exact "
            "rollouts need a chat template that renders earlier messages the same way "
            "whatever follows them, and a tokenizer whose decoding round-trips",
        )
    return tuple(tokenizer.encode(rendered[len(held) :]))
