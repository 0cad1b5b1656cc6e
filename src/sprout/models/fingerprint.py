"""Which tokenizer made a run's token ids, so that no one trains on ids another one made.

A run records the fingerprint of the tokenizer its attempts were played with (its meta's
`tokenizer`, `sprout.tree.TokenizerFingerprint`); exports carry it beside their records;
the actor and the learner refuse a model whose tokenizer differs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from sprout.models.types import ModelError

PROBE: list[dict[str, str]] = [{"role": "user", "content": "sprout"}]
"""The conversation whose ids (chat template applied, generation prompt added) stand for a
tokenizer that a server hides: vLLM's fingerprint is the hash of these ids (`probe_sha256`)."""


def probe_sha256(ids: list[int]) -> str:
    """The hash of `PROBE`'s ids, as a fingerprint records it."""
    return hashlib.sha256(repr(list(ids)).encode()).hexdigest()


def tokenizer_fingerprint(tokenizer: Any) -> dict[str, Any]:
    """``{"sha256", "probe_sha256", "eos_token_id", "vocab_size"}``: the hash covers the
    vocabulary and merges (with the added tokens, normaliser and pre-tokeniser), the chat
    template and the EOS id, so two tokenizers with equal hashes turn the same conversation
    into the same ids; `probe_sha256` is `PROBE`'s, to match a server that shows only ids."""
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
    probe = tokenizer.apply_chat_template(PROBE, tokenize=False, add_generation_prompt=True)
    return {
        "sha256": hashlib.sha256(canonical.encode()).hexdigest(),
        "probe_sha256": probe_sha256(tokenizer.encode(probe, add_special_tokens=False)),
        "eos_token_id": tokenizer.eos_token_id,
        "vocab_size": len(tokenizer),
    }


def check_tokenizer(
    stored: Mapping[str, Any] | None, fingerprint: Mapping[str, Any], *, where: str
) -> None:
    """Refuse (`ModelError` kind ``tokenizer_mismatch``) token ids of `where` (a run's store)
    that a different tokenizer made; `stored` is its meta (None: nothing recorded yet). A
    server that shows no vocabulary (vLLM) recorded only its probe's ids: those are compared."""
    if stored is None:
        return
    key = "sha256" if "sha256" in stored else "probe_sha256"
    if stored.get(key) == fingerprint.get(key):
        return
    raise ModelError(
        "tokenizer_mismatch",
        f"{where}: its token ids were made by tokenizer {str(stored.get(key))[:12]} "
        f"({stored.get('model', 'unknown model')}), but {fingerprint.get('model', 'this model')} "
        f"has tokenizer {str(fingerprint.get(key))[:12]}; use the model the run was played "
        "with (or one sharing its tokenizer), or a new run folder",
    )
