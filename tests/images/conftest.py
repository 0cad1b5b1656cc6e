"""The registry fixtures of the pull tests (tests/support/registry_world.py)."""

from __future__ import annotations

import fcntl
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sprout.images import ImageCache
from sprout.images.blobs import blob_dir
from sprout.images.chains import chain_dir
from tests.support.registry_world import Registry, needs_registry, running_registry


@pytest.fixture
def cache(tmp_path: Path) -> ImageCache:
    """An image cache of the test's own."""
    return ImageCache(tmp_path / "images")


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


@pytest.fixture
def pulls_removed_after(trusted: Registry) -> Iterator[Registry]:
    """What a test pulls into the suite's image cache (which is the machine's, linked) is
    removed after it: the images named from the test's registry, their lock files, the
    blobs they brought and the chains their layers made. Such tests take turns across the
    suite's workers: the blobs and chains a test brought are those new since it started,
    and another worker's pull must not be among them."""
    cache = ImageCache()  # each worker's suite cache links the machine's images: one lock
    with (Path(tempfile.gettempdir()) / "sprout-tests-pulls-removed-after.lock").open("a") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)
        yield from _removing_pulls(cache, trusted)


def _removing_pulls(cache: ImageCache, trusted: Registry) -> Iterator[Registry]:
    blobs, chains = blob_dir(cache), chain_dir(cache)
    before = set(blobs.rglob("*")) if blobs.is_dir() else set()
    chains_before = set(chains.iterdir()) if chains.is_dir() else set()
    yield trusted
    for path in set(chains.iterdir()) - chains_before if chains.is_dir() else ():
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()  # a chain's lock file
    for image in cache.images():
        if any(name.startswith(f"{trusted.host}/") for name in image.names):
            cache.remove_image(image.digest)
            (cache.root / f"{image.digest}.lock").unlink(missing_ok=True)  # no one waits on it
    for path in set(blobs.rglob("*")) - before if blobs.is_dir() else ():
        if path.is_file():
            path.unlink()
