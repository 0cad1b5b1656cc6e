"""Bottom layers pulled images share are unpacked once, into a chain that every later image
on them hard-links: no image's layers, and no sandbox, change another image's files, and
`sprout gc --images` frees a chain once no image starts with it."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from sprout.images import ImageCache
from sprout.images.chains import chain_dir
from sprout.images.pull import pull
from sprout.sandbox import LayerStore, Sandbox
from tests.support.registry_world import BASE, Layout, Registry, layer_blob, push_app, tree_blob
from tests.support.rootfs import build_rootfs


def special_layer(entries: list[tarfile.TarInfo]) -> tuple[bytes, str]:
    """A gzipped layer of entries with no content (folders, hard links), its diff id."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for entry in entries:
            tar.addfile(entry)
    return gzip.compress(raw.getvalue(), mtime=0), "sha256:" + hashlib.sha256(
        raw.getvalue()
    ).hexdigest()


def test_bottom_layers_images_share_are_unpacked_once_and_no_image_changes_anothers_files(
    trusted: Registry, tmp_path: Path, cache: ImageCache
) -> None:
    first = pull(push_app(trusted, tmp_path, "acme/c-one", b"one\n"), cache=cache)
    second = pull(push_app(trusted, tmp_path, "acme/c-two", b"two\n"), cache=cache)
    third = pull(push_app(trusted, tmp_path, "acme/c-three", b"three\n"), cache=cache)
    assert "chain" not in first.source, "the first of its base has nothing to share with"
    assert second.source["chain"] == third.source["chain"]
    big = [(Path(image.rootfs) / "opt/big").stat() for image in (first, second, third)]
    assert big[1].st_ino == big[2].st_ino != big[0].st_ino, "one file for the later two"
    assert (Path(third.rootfs) / "etc/app").read_bytes() == b"three\n"

    folder = tarfile.TarInfo("etc/base-release")  # a folder where the base has a file
    folder.type, folder.mode = tarfile.DIRTYPE, 0o700
    link = tarfile.TarInfo("opt/big-link")  # a hard link to the shared file, another mode
    link.type, link.linkname, link.mode = tarfile.LNKTYPE, "opt/big", 0o600
    layout = Layout(tmp_path / "layout-c-four")
    layout.tag("v1", layout.image([BASE, special_layer([folder, link])]))
    fourth = pull(trusted.push(layout, "v1", "acme/c-four"), cache=cache)
    assert fourth.source["chain"] == second.source["chain"]
    assert (Path(fourth.rootfs) / "etc/base-release").is_dir()
    assert (Path(fourth.rootfs) / "opt/big-link").stat().st_mode & 0o777 == 0o600
    assert (Path(second.rootfs) / "etc/base-release").read_bytes() == b"base 1\n"
    assert (Path(second.rootfs) / "opt/big").stat().st_mode & 0o777 == 0o755, "not chmodded"
    assert (Path(fourth.rootfs) / "opt/big").stat().st_ino != big[1].st_ino, "its own copy"


def test_gc_images_frees_a_chain_once_no_image_starts_with_it(
    trusted: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sprout.images import gc
    from sprout.sandbox import note_image

    monkeypatch.setenv("SPROUT_CACHE", str(tmp_path / "machine"))
    monkeypatch.setenv("SPROUT_STORE_FS", "off")
    monkeypatch.setattr(gc, "BLOB_GRACE_S", 0.0)  # no pull is under way here
    cache = ImageCache()
    pull(push_app(trusted, tmp_path, "acme/g-one", b"one\n"), cache=cache)
    two = pull(push_app(trusted, tmp_path, "acme/g-two", b"two\n"), cache=cache)
    chain = chain_dir(cache) / two.source["chain"]
    assert chain.is_dir()
    (tmp_path / "run-store").mkdir()
    note_image(str(tmp_path / "run-store"), two.digest)  # a run's store stands on two
    assert gc.collect(images=True, dry_run=True).chains == 0, "two starts with it"
    assert gc.collect(images=True).chains == 0 and chain.is_dir()
    cache.remove_image(two.digest)
    assert gc.collect(images=True, dry_run=True).chains == 1 and chain.is_dir()
    done = gc.collect(images=True)
    assert done.chains == 1 and not chain.exists()
    assert done.bytes_freed >= 2_000_000, "the base's big file had no other link"


@pytest.mark.sandbox
def test_a_sandbox_that_writes_a_linked_file_changes_no_other_image(
    trusted: Registry, tmp_path: Path, cache: ImageCache, overlay_store: LayerStore
) -> None:
    root = tmp_path / "rootfs"
    build_rootfs(root)
    bottom = tree_blob(root)
    images = []
    for name in ("s-one", "s-two"):
        layout = Layout(tmp_path / f"layout-{name}")
        own = layer_blob({"etc/app": name.encode()})
        layout.tag("v1", layout.image([bottom, BASE, own], config={"Env": ["PATH=/bin"]}))
        images.append(pull(trusted.push(layout, "v1", f"acme/{name}"), cache=cache))
    first, second = images
    assert "chain" in second.source
    with Sandbox.create(overlay_store, image=second.rootfs, network=False) as sandbox:
        done = sandbox.run("cat /etc/base-release && echo changed > /etc/base-release")
        assert done.exit_code == 0 and done.output == "base 1\n"
        assert sandbox.run("cat /etc/base-release").output == "changed\n"
    chain = chain_dir(cache) / second.source["chain"] / "rootfs"
    for rootfs in (chain, Path(first.rootfs), Path(second.rootfs)):
        assert (rootfs / "etc/base-release").read_bytes() == b"base 1\n"
