"""A tiny causal LM built once per test process (no download), for the training, rollout and
cluster tests: `sprout.train.tiny`'s model, with a ChatML template and ~30k parameters.

Tests that use it skip, with the reason, where torch or transformers is not installed (they
come with the `train` extra).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.requirements import require_train_extra


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding `sprout.train.tiny`'s model: ChatML template, ~30k parameters."""
    require_train_extra()
    from sprout.train.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
