"""The network tests' world of namespaces (tests/support/net_world.py), in place of the
suite's `world` of tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.net_world import World, make_world
from tests.support.requirements import require_host_image


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """The network tests' world of namespaces, gone after the test."""
    require_host_image()
    made = make_world(tmp_path / "world")
    try:
        yield made
    finally:
        made.close()
