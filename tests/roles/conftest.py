"""Fixtures for the role tests: the world's task files (the world is tests/conftest.py's),
and a chat server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.chat_server import ChatServer
from tests.support.role_inputs import FILES


@pytest.fixture
def world_files() -> dict[str, str]:
    """README, src/app.py and src/util.py: code whose traceback the roles can point into."""
    return FILES


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
