"""Token estimates for replies whose server sent no usage, and for the oracles."""

from __future__ import annotations

CHARS_PER_TOKEN = 4
"""The usual rule of thumb for English and code with BPE tokenisers."""


def estimate_tokens(text: str) -> int:
    """A length-based estimate; every figure derived from it is marked as an estimate."""
    return max(1, -(-len(text) // CHARS_PER_TOKEN)) if text else 0
