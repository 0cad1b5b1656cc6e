"""llama.cpp's `/completion` reply read as a sample: the ids it sampled, one log-prob each."""

from __future__ import annotations

import pytest

from sprout.models.http_json import JsonServer
from sprout.models.llamacpp import LlamaCppServer
from sprout.models.types import ModelError


def _reply(tokens: list[int], probs: int, stop_type: str) -> dict[str, object]:
    """A reply as llama-server sends it, with probabilities for its first `probs` tokens."""
    return {
        "tokens": tokens,
        "completion_probabilities": [
            {"id": t, "token": "x", "logprob": -0.5} for t in tokens[:probs]
        ],
        "stop_type": stop_type,
    }


def _server() -> LlamaCppServer:
    return LlamaCppServer(JsonServer("http://127.0.0.1:9", timeout_s=1, retries=0))


def test_a_character_the_length_limit_cut_in_two_is_left_out():
    """llama-server withholds the probabilities of the tokens of a character it never
    finished (seen with SmolLM2 and emoji at a small n_predict): the reply ends before it."""
    sample = _server()._sample(_reply([5, 6, 7, 239, 240], 3, "limit"), 0)
    assert sample.ids == (5, 6, 7) and len(sample.logprobs) == 3 and not sample.stopped


def test_a_reply_that_stopped_still_needs_every_log_prob():
    with pytest.raises(ModelError, match="5 sampled ids but 3 log-probs") as caught:
        _server()._sample(_reply([5, 6, 7, 8, 2], 3, "eos"), 0)
    assert caught.value.kind == "malformed"
