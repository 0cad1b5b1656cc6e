"""Fixtures for the role tests: a sandbox world holding the task's files, and a chat server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore
from tests.agent.helpers import World, make_world
from tests.models.chat_server import ChatServer
from tests.roles.helpers import FILES


@pytest.fixture
def world(overlay_store: LayerStore, tmp_path: Path) -> World:
    """A task whose /workspace holds README, src/app.py and src/util.py, over the host image
    (skips, or fails under SPROUT_REQUIRE_SANDBOX=1, where the overlay sandbox cannot run)."""
    return make_world(overlay_store, tmp_path, files=FILES)


@pytest.fixture(scope="module")
def _running_server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


@pytest.fixture
def server(_running_server: ChatServer) -> ChatServer:
    """An OpenAI-compatible chat server on loopback, with scripted replies; one per module
    (shutting a server down takes half a second), emptied for each test."""
    _running_server.replies.clear()
    _running_server.requests.clear()
    _running_server.headers.clear()
    return _running_server
