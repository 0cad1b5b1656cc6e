"""Fixtures of the training tests: a tiny causal LM built once per session (no download).

Tests that use it skip, with the reason, where torch or transformers is not
installed (they come with the `train` extra).
"""

from __future__ import annotations

from pathlib import Path

import pytest


def require_train_extra() -> None:
    """Skip unless torch and transformers import (``pip install sprout-rl[train]``)."""
    for module in ("torch", "transformers"):
        pytest.importorskip(module, reason=f"{module} is not installed (the train extra)")


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding `sprout.train.tiny`'s model: ChatML template, ~30k parameters."""
    require_train_extra()
    from sprout.train.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
