"""`Sandbox.create(store, image=NAME)`: the API takes the images the command line made, as
`sprout image list` shows them (a name, `NAME@sha256:...`, the image's id), starts its
commands with the image's ENV, never pulls behind the caller's back, and keeps the image
from `sprout gc --images` while a checkpoint stands on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout.images import ImageCache
from sprout.images.gc import collect
from sprout.images.oci import import_image
from sprout.sandbox import BadArgument, ImageCatalog, LayerStore, Sandbox
from tests.support.oci_archives import docker_save, rootfs_layer
from tests.support.requirements import require_host_image

NAME = "acme/env-tool:2"
CONFIG = {"config": {"Env": ["PATH=/usr/bin:/bin", "GREETING=from the image", "KEPT=image"]}}


@pytest.fixture
def machine_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minimal_rootfs: Path
) -> ImageCache:
    """A machine cache of the test's own holding NAME, imported as `sprout image import`
    imports a `docker save` tarball, with an ENV in its config."""
    require_host_image()
    monkeypatch.setenv("SPROUT_CACHE", str(tmp_path / "machine-cache"))
    tarball = docker_save(tmp_path / "image.tar", [rootfs_layer(minimal_rootfs)], NAME, CONFIG)
    import_image(tarball, NAME)
    return ImageCache()


@pytest.mark.sandbox
def test_an_image_by_name_checkpoints_and_forks_with_its_env(
    machine_cache: ImageCache, tmp_path: Path
):
    store = LayerStore(tmp_path / "layers")
    with Sandbox.create(store, image=NAME, env={"KEPT": "caller"}) as sandbox:
        shown = sandbox.run('echo "$GREETING/$KEPT"; echo one > /workspace/f')
        assert shown.exit_code == 0, shown.output
        assert shown.output.strip() == "from the image/caller"  # env wins over the image's
        first = sandbox.checkpoint()
        sandbox.run("echo two > /workspace/f")
        sandbox.checkpoint()
    with Sandbox.fork(store, first) as branch:
        assert branch.run("cat /workspace/f").output == "one\n"
        assert branch.run('echo "$GREETING"').output == "from the image\n"  # forks keep it
    image = machine_cache.get(NAME)
    assert image is not None and store.layer(first).config.image == image.rootfs


@pytest.mark.sandbox
def test_an_image_by_its_id(machine_cache: ImageCache, tmp_path: Path):
    image = machine_cache.get(NAME)
    assert image is not None
    with Sandbox.create(LayerStore(tmp_path / "layers"), image=image.digest) as sandbox:
        assert sandbox.run('echo "$GREETING"').output == "from the image\n"


def test_a_pulled_name_with_its_registry_digest_is_found(tmp_path: Path):
    """`NAME@sha256:...`, as `sprout image list` shows a pulled image's source, finds the
    image pulled by tag; another digest finds nothing."""
    cache = ImageCache(tmp_path / "images")
    digest = "sha256:" + "a" * 64
    listed = "sha256:" + "b" * 64
    source = {"kind": "registry", "digest": digest, "list_digest": listed}
    made = cache.ensure("ghcr.io/acme/app:1", "reg-aaaa", source, lambda root: None)
    catalog = ImageCatalog(tmp_path / "images")
    assert catalog.find(f"ghcr.io/acme/app:1@{digest}") == made
    assert catalog.find(f"ghcr.io/acme/app:1@{listed}") == made
    assert catalog.find("ghcr.io/acme/app:1@sha256:" + "c" * 64) is None
    assert catalog.find("reg-aaaa") == made
    assert catalog.find("../images/reg-aaaa") is None  # an id never leaves the cache
    assert catalog.find("names") is None


def test_a_name_not_in_the_cache_is_one_line_and_pulls_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SPROUT_CACHE", str(tmp_path / "machine-cache"))
    store = LayerStore(tmp_path / "layers", mode="copy")
    with pytest.raises(BadArgument) as raised:
        Sandbox.create(store, image="python:3.99-slim")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("image: python:3.99-slim is no folder and no image")
    assert "sprout image pull python:3.99-slim" in message
    assert "sprout image build python:3.99-slim" in message
    assert ImageCache().images() == []
    with pytest.raises(BadArgument, match="is not a directory holding a root filesystem"):
        Sandbox.create(store, image="./no-such-rootfs")


@pytest.mark.sandbox
def test_gc_keeps_an_image_a_store_of_the_api_stands_on(machine_cache: ImageCache, tmp_path: Path):
    store = LayerStore(tmp_path / "layers")
    with Sandbox.create(store, image=NAME) as sandbox:
        sandbox.run("echo kept > /workspace/f")
        kept = sandbox.checkpoint()
    image = machine_cache.get(NAME)
    assert image is not None
    collected = collect(images=True, keep_days=0)
    assert image.digest not in collected.images
    assert str(tmp_path / "layers") in collected.kept_images[image.digest]
    with Sandbox.fork(store, kept) as branch:
        assert branch.run("cat /workspace/f").output == "kept\n"
    notes = [
        json.loads(note.read_text())
        for note in (machine_cache.root / "stores").iterdir()
        if note.suffix != ".lock"
    ]
    assert [note["images"] for note in notes] == [[image.digest]]
