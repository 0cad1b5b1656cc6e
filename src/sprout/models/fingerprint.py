"""Which tokenizer made a run's token ids, so that no one trains on ids another one made.

A run records the fingerprint of the tokenizer its attempts were played with
(meta key `tokenizer`); exports carry it beside their records; the actor and
the learner refuse a model whose tokenizer differs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from sprout.models.types import ModelError

TOKENIZER_META = "tokenizer"
"""The run-meta key the fingerprint is stored under."""


def tokenizer_fingerprint(tokenizer: Any) -> dict[str, Any]:
    """``{"sha256", "eos_token_id", "vocab_size"}``: the hash covers the vocabulary and merges
    (with the added tokens, normaliser and pre-tokeniser), the chat template and the EOS id,
    so two tokenizers with equal hashes turn the same conversation into the same ids."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        spec = json.loads(backend.to_str())
        parts = {
            key: spec.get(key) for key in ("model", "added_tokens", "normalizer", "pre_tokenizer")
        }
    else:
        parts = {"vocab": sorted(tokenizer.get_vocab().items())}
    parts["chat_template"] = tokenizer.chat_template
    parts["eos_token_id"] = tokenizer.eos_token_id
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return {
        "sha256": hashlib.sha256(canonical.encode()).hexdigest(),
        "eos_token_id": tokenizer.eos_token_id,
        "vocab_size": len(tokenizer),
    }


def check_tokenizer(
    stored: Mapping[str, Any] | None, fingerprint: Mapping[str, Any], *, where: str
) -> None:
    """Refuse (`ModelError` kind ``tokenizer_mismatch``) token ids of `where` (a run's store)
    that a different tokenizer made; `stored` is its meta (None: nothing recorded yet)."""
    if stored is None or stored.get("sha256") == fingerprint.get("sha256"):
        return
    raise ModelError(
        "tokenizer_mismatch",
        f"{where}: its token ids were made by tokenizer {str(stored.get('sha256'))[:12]} "
        f"({stored.get('model', 'unknown model')}), but {fingerprint.get('model', 'this model')} "
        f"has tokenizer {str(fingerprint.get('sha256'))[:12]}; use the model the run was played "
        "with (or one sharing its tokenizer), or a new run folder",
    )
