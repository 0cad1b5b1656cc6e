"""The tokenizer half of a local Hugging Face model: its chat template, as token-exact
rollouts need it.

The actor passes the stored ids of the context so far (`prefix_ids`); only what the
messages add after them is rendered and tokenized. That delta is the rendered
conversation (generation prompt included) minus the decoded prefix, so it also holds
whatever closing text the template puts after a reply that the model did not generate
(the newline after ChatML's ``<|im_end|>``, or the whole end of turn when a reply hit the
token limit). A template that renders earlier messages differently once more follow (one
that drops earlier reasoning, say) is refused with a `ModelError`.

transformers is imported when a tokenizer is loaded, never at import.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sprout.models.chat_tokens import added_ids
from sprout.models.fingerprint import tokenizer_fingerprint
from sprout.models.types import Message, ModelError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
_PROBE = "\x00sprout-reply\x00"


class HFTokenizer:
    """The tokenizer (with its chat template) of the model folder `path`, called `name` in
    messages: text to ids and back, conversations rendered, a reply's end-of-turn token."""

    def __init__(self, path: Path, name: str, *, loaded: Any = None) -> None:
        """`loaded`: the tokenizer of `path` when the caller holds it already (`of`)."""
        self.path = path
        self.name = name
        self._lock = threading.RLock()
        """One call at a time: the tokenizer is not safe to share across threads (nor is the
        module of a model built on this)."""
        self.tokenizer = (
            load_tokenizer(path, name) if loaded is None else with_template(loaded, path, name)
        )
        self.end_of_turn_id = self._end_of_turn()
        self._fingerprint = tokenizer_fingerprint(self.tokenizer)

    @staticmethod
    def of(tokenizer: Any, name: str) -> HFTokenizer:
        """The `HFTokenizer` of a tokenizer already loaded (a trainer such as verl hands its
        rollout code the one it loaded): loading its folder again would cost time and could
        pick up files other than those the trainer tokenizes with."""
        path = Path(str(getattr(tokenizer, "name_or_path", "") or "."))
        return HFTokenizer(path, name, loaded=tokenizer)

    def tokenizer_fingerprint(self) -> dict[str, Any]:
        """This model's tokenizer fingerprint (see `tokenizer_fingerprint`), with the model name."""
        return {**self._fingerprint, "model": self.name}

    def encode(self, text: str) -> list[int]:
        """`text` as token ids, special-token text included, nothing added around it."""
        with self._lock:
            return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        """Exactly the text of `ids`, special tokens included."""
        with self._lock:
            return str(
                self.tokenizer.decode(
                    list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False
                )
            )

    def encode_reply(self, text: str) -> tuple[int, ...]:
        """`text` tokenized as a reply of this model: its ids, then the end-of-turn token."""
        return (*self.encode(text), self.end_of_turn_id)

    def render(self, messages: list[Message], *, add_generation_prompt: bool = True) -> str:
        """`messages` through the tokenizer's chat template, as text."""
        try:
            with self._lock:
                return str(
                    self.tokenizer.apply_chat_template(
                        messages, tokenize=False, add_generation_prompt=add_generation_prompt
                    )
                )
        except Exception as error:  # jinja raises its own errors, and templates raise freely
            raise ModelError(
                "template", f"{self.name}: the chat template failed: {first_line(error)}"
            ) from None

    def context_ids(self, messages: list[Message], prefix_ids: Sequence[int]) -> tuple[int, ...]:
        """The ids `messages` add after the stored context `prefix_ids` (`chat_tokens`)."""
        return added_ids(self, self.name, messages, prefix_ids)

    def count_tokens(self, messages: list[Message]) -> int:
        """The tokens of `messages` as a prompt (generation prompt included), exactly."""
        return len(self.context_ids(messages, ()))

    def _end_of_turn(self) -> int:
        """The token the template closes an assistant reply with (ChatML: ``<|im_end|>``)."""
        eos = self.tokenizer.eos_token_id
        probe = [{"role": "user", "content": "?"}, {"role": "assistant", "content": _PROBE}]
        try:
            rendered = self.render(probe, add_generation_prompt=False)
        except ModelError:
            rendered = ""
        after = rendered.rpartition(_PROBE)[2] if _PROBE in rendered else ""
        closing = self.encode(after) if after else []
        special = set(self.tokenizer.all_special_ids) | set(
            getattr(self.tokenizer, "added_tokens_decoder", {}) or {}
        )
        if closing and closing[0] in special:
            return int(closing[0])
        if eos is None:
            raise ModelError(
                "bad_input",
                f"{self.name}: the tokenizer has no EOS token and its chat template closes a "
                "reply with no special token; a reply's end cannot be told",
            )
        return int(eos)


class LocalTemplate:
    """The text half of a `TokenServer` whose server is sent ids only (SGLang's `/generate`,
    verl's `generate`): the model's template and tokenizer applied here, by `tokenizer`."""

    kind: str
    base_url: str
    tokenizer: HFTokenizer

    def render(self, messages: list[Message]) -> str:
        return self.tokenizer.render(messages)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids)

    def end_of_turn(self) -> int:
        return self.tokenizer.end_of_turn_id

    def fingerprint(self) -> dict[str, Any]:
        return {
            **self.tokenizer.tokenizer_fingerprint(),
            "server": self.kind,
            "base_url": self.base_url,
        }


def load_tokenizer(path: Path, name: str) -> Any:
    """The tokenizer of the model folder `path`; a `ModelError` naming it when there is none,
    or when it has no chat template."""
    if not path.is_dir():
        raise ModelError(
            "bad_input",
            f"{name}: {path} is not a folder; expected a Hugging Face model folder "
            "(config.json, weights, tokenizer)",
        )
    if not any((path / file).is_file() for file in TOKENIZER_FILES):
        raise ModelError(
            "bad_input",
            f"{name}: {path} has no tokenizer (none of {', '.join(TOKENIZER_FILES)})",
        )
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as error:
        raise ModelError(
            "bad_input", f"{name}: cannot load the tokenizer in {path}: {first_line(error)}"
        ) from None
    return with_template(tokenizer, path, name)


def with_template(tokenizer: Any, path: Path, name: str) -> Any:
    """`tokenizer` (of the folder `path`), or a `ModelError` naming it when it has no chat
    template: a conversation cannot be rendered without one."""
    if not getattr(tokenizer, "chat_template", None):
        raise ModelError(
            "bad_input",
            f"{name}: the tokenizer in {path} has no chat template (chat_template.jinja or "
            "tokenizer_config.json's chat_template); an instruct model's folder has one",
        )
    return tokenizer


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
