"""A role's prompt built to fit the model's context window.

The prompt is rendered at its most detailed (`detail.FULL`, the caps every prompt has)
and counted as the model will count it: by its tokenizer where its client has one,
else estimated (`sprout.models.window.prompt_tokens`). While it is over its budget, the
window less the tokens kept for the reply, it is rendered a step briefer (a role's
`detail` ladder); a rendering that is longer, in characters, than the last one counted
scaled to the budget is skipped uncounted, so a huge attempt costs a few counts, not a
count per step. A prompt over its budget even at its briefest is `PromptTooLong`: a
refusal like a reply that cannot be read, so the role's heuristic answers, with the
reason. A model with no known window gets the most detailed prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sprout.models.window import ContextWindow, context_window, prompt_tokens
from sprout.roles.ask import Refused
from sprout.roles.detail import Detail

REPLY_TOKENS = 2_048
"""Tokens kept for a role's reply when the client asks for replies of no set length
(`[model] max_tokens`, `hf/`'s max_new_tokens); a JSON analysis or review needs less."""


class PromptTooLong(Refused):
    """A role's prompt over its budget even at its briefest; the message says by how much."""


@dataclass(frozen=True)
class Budget:
    """The tokens a role's prompt may take: the model's window less the reply's."""

    model: object
    window: ContextWindow
    reply: int

    @property
    def tokens(self) -> int:
        return self.window.tokens - self.reply

    def count(self, prompt: str) -> int:
        """`prompt`'s tokens as the one message the role sends."""
        return prompt_tokens(self.model, [{"role": "user", "content": prompt}])[0]

    def describe(self) -> str:
        return f"{self.tokens} tokens ({self.window.describe()} less {self.reply} for the reply)"


def budget_for(model: object) -> Budget | None:
    """`model`'s budget for a role's prompt; None when its window is unknown. The reply
    keeps what the client asks replies to be at most (else `REPLY_TOKENS`), and never more
    than half the window."""
    window = context_window(model)
    if window is None:
        return None
    reply = min(window.reply_tokens or REPLY_TOKENS, window.tokens // 2)
    return Budget(model, window, reply)


def fit(
    render: Callable[[Detail], str], ladder: Sequence[Detail], budget: Budget | None, role: str
) -> str:
    """The first of `render(detail)` down `ladder` that fits `budget`; `PromptTooLong` when
    the last does not."""
    if budget is None:
        return render(ladder[0])
    scale: float | None = None
    """Characters per budget's worth of tokens, as the last prompt counted had them."""
    for number, detail in enumerate(ladder):
        prompt = render(detail)
        if scale is not None and len(prompt) > scale and number < len(ladder) - 1:
            continue
        tokens = budget.count(prompt)
        if tokens <= budget.tokens:
            return prompt
        scale = len(prompt) * budget.tokens / tokens
    raise PromptTooLong(
        f"the {role}'s prompt has {tokens} tokens at its briefest, over its budget of "
        f"{budget.describe()}"
    )
