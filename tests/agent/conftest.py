"""A world (layer store, SQLite store, tree, task checkpoint) for the actor tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.sandbox import LayerStore
from tests.agent.helpers import World, make_world


@pytest.fixture
def world(overlay_store: LayerStore, tmp_path: Path) -> World:
    """A task whose /workspace holds README and src/app.py, over the host image."""
    files = {"README": "a task\n", "src/app.py": "print('hi')\n"}
    return make_world(overlay_store, tmp_path, files=files)
