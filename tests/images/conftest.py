"""The registry fixtures of the pull tests (tests/images/registry_world.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.images.registry_world import Registry, needs_registry, running_registry


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    needs_registry()
    with running_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running


@pytest.fixture
def trusted(registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Registry:
    """This test's process (and its skopeo) trusts the registry's CA and has its login."""
    monkeypatch.setenv("SSL_CERT_FILE", str(registry.ca))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(registry.auth_file(tmp_path / "auth.json")))
    return registry
