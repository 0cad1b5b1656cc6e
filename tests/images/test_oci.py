"""Importing images: docker save tarballs and OCI layouts, whiteouts, and layers that attack."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest
import zstandard

from sprout.images import ImageCache, ImageError
from sprout.images.names import choose_image
from sprout.images.oci import import_image
from sprout.sandbox import LayerStore, Sandbox
from tests.support.oci_archives import Entry, docker_save, layer, oci_layout, rootfs_layer


def zstd_layer() -> bytes:
    """A zstd-compressed layer of a file of random bytes, as one frame."""
    return zstandard.compress(layer([("opt/data", os.urandom(4096), {})]))


LOWER: list[Entry] = [
    ("app", None, {}),
    ("app/a.txt", b"a\n", {}),
    ("app/b.txt", b"b\n", {}),
    ("data", None, {}),
    ("data/old.txt", b"old\n", {}),
    ("data/sub", None, {}),
    ("data/sub/deep.txt", b"deep\n", {}),
    ("scratch", None, {"mode": 0o1777}),
    ("usr/bin/tool", b"#!/bin/sh\n", {"mode": 0o4755}),
    ("home/user/note.txt", b"mine\n", {"uid": 1000, "gid": 1000}),
    ("lib64link", "usr/bin", {}),
]
UPPER: list[Entry] = [
    ("app/.wh.a.txt", b"", {}),
    ("data/.wh..wh..opq", b"", {}),
    ("data/new.txt", b"new\n", {}),
    ("app/b.txt", b"b, replaced\n", {}),
]


def check_applied(rootfs: Path) -> None:
    assert not (rootfs / "app/a.txt").exists(), "the whiteout deleted a.txt"
    assert (rootfs / "app/b.txt").read_text() == "b, replaced\n"
    assert sorted(p.name for p in (rootfs / "data").iterdir()) == ["new.txt"], "opaque folder"
    assert (rootfs / "scratch").stat().st_mode & 0o7777 == 0o1777
    assert (rootfs / "usr/bin/tool").stat().st_mode & 0o7777 == 0o4755
    assert os.readlink(rootfs / "lib64link") == "usr/bin"
    if os.geteuid() == 0:
        assert (rootfs / "home/user/note.txt").stat().st_uid == 1000


def test_a_docker_save_tarball_is_applied_layer_by_layer(tmp_path: Path):
    cache = ImageCache(tmp_path / "cache")
    tarball = docker_save(tmp_path / "image.tar", [layer(LOWER, compress=True), layer(UPPER)])
    image = import_image(tarball, cache=cache)
    assert image.names == ("acme/tool:1",)
    check_applied(Path(image.rootfs))
    assert image.source["kind"] == "oci" and cache.get("acme/tool:1") == image
    again = import_image(tarball, "other:2", cache=cache)
    assert again.digest == image.digest and set(again.names) == {"acme/tool:1", "other:2"}
    assert cache.remove("acme/tool:1") and Path(image.rootfs).is_dir(), "other:2 still names it"
    assert cache.remove("other:2") and not Path(image.rootfs).exists()
    assert not cache.remove("other:2")


def test_an_oci_layout_folder_and_its_tar_import_alike(tmp_path: Path):
    cache = ImageCache(tmp_path / "cache")
    upper = zstandard.compress(layer(UPPER))  # whiteouts in a zstd layer apply alike
    folder = oci_layout(tmp_path / "layout", [layer(LOWER, compress=True), upper])
    from_folder = import_image(folder, "from-folder:1", cache=cache)
    check_applied(Path(from_folder.rootfs))
    packed = tmp_path / "layout.tar"
    with tarfile.open(packed, "w") as tar:
        tar.add(folder, arcname=".")
    from_tar = import_image(packed, cache=cache)
    assert from_tar.digest == from_folder.digest and "acme/tool:1" in from_tar.names
    chosen = choose_image("acme/tool:1", "cache", cache)
    assert (chosen.how, chosen.approximation) == ("cache", ""), "imported: no approximation"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([("out/.wh.canary", b"", {})], "outside the root filesystem"),
        ([("out/.wh..wh..opq", b"", {})], "outside the root filesystem"),
        ([("out/planted", b"x", {})], "outside"),
        ([("../planted", b"x", {})], "outside"),
        ([("hard", b"", {"type": tarfile.LNKTYPE, "linkname": "../../canary"})], "outside"),
    ],
)
def test_a_layer_cannot_reach_this_machines_files(
    tmp_path: Path, entries: list[Entry], message: str
):
    outside = tmp_path / "outside"
    outside.mkdir()
    canary = outside / "canary"
    canary.write_text("still here\n")
    lower = layer([("out", str(outside), {})])  # an absolute link to the host's folder
    tarball = docker_save(tmp_path / "attack.tar", [lower, layer(entries)])
    cache = ImageCache(tmp_path / "cache")
    with pytest.raises(ImageError, match=message):
        import_image(tarball, cache=cache)
    assert canary.read_text() == "still here\n"
    assert sorted(p.name for p in outside.iterdir()) == ["canary"]
    assert cache.images() == [] and cache.get("acme/tool:1") is None, "nothing half-built"


def test_a_folder_entry_over_a_link_to_this_machine_replaces_the_link_not_the_host_folder(
    tmp_path: Path,
):
    """tarfile would chmod and chown an existing path a folder entry names, through a link;
    the entry replaces the link instead, as Docker applies it."""
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    (outside / "canary").write_text("still here\n")
    before = outside.stat()
    lower = layer([("out", str(outside), {})])  # an absolute link to the host's folder
    upper = layer([("out", None, {"mode": 0o777, "uid": 4242, "gid": 4242})])
    tarball = docker_save(tmp_path / "attack.tar", [lower, upper])
    image = import_image(tarball, cache=ImageCache(tmp_path / "cache"))
    landed = Path(image.rootfs) / "out"
    assert landed.is_dir() and not landed.is_symlink() and not any(landed.iterdir())
    after = outside.stat()
    assert (after.st_mode, after.st_uid, after.st_gid) == (
        before.st_mode,
        before.st_uid,
        before.st_gid,
    )
    assert sorted(p.name for p in outside.iterdir()) == ["canary"]


def test_device_nodes_are_left_out(tmp_path: Path):
    device = ("disk", b"", {"type": tarfile.BLKTYPE, "devmajor": 8, "devminor": 0})
    tarball = docker_save(tmp_path / "image.tar", [layer([device, ("ok.txt", b"ok\n", {})])])
    image = import_image(tarball, cache=ImageCache(tmp_path / "cache"))
    assert (Path(image.rootfs) / "ok.txt").exists()
    assert not os.path.lexists(Path(image.rootfs) / "disk")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text("not an image"), "not a folder or a tar file"),
        (lambda p: docker_save(p, [zstd_layer()[:40]]), "is not a readable tar"),
        (lambda p: docker_save(p, [b"not a tar, nor compressed"]), "is not a readable tar"),
        (lambda p: docker_save(p, [layer([])], tag=""), None),
    ],
)
def test_what_is_not_an_importable_image_is_named(tmp_path: Path, make, message):
    path = tmp_path / "image.tar"
    make(path)
    if message is None:  # an untagged image needs a name
        with pytest.raises(ImageError, match="has no tag; give it a name"):
            import_image(path, cache=ImageCache(tmp_path / "cache"))
        return
    with pytest.raises(ImageError, match=message):
        import_image(path, cache=ImageCache(tmp_path / "cache"))
    with pytest.raises(ImageError, match="no such file"):
        import_image(tmp_path / "absent.tar", cache=ImageCache(tmp_path / "cache"))


@pytest.mark.sandbox
def test_a_sandbox_runs_on_an_imported_image(
    overlay_store: LayerStore, minimal_rootfs: Path, tmp_path: Path
):
    tarball = docker_save(tmp_path / "image.tar", [rootfs_layer(minimal_rootfs), layer(UPPER)])
    image = import_image(tarball, cache=ImageCache(tmp_path / "cache"))
    with Sandbox.create(overlay_store, image=image.rootfs, workdir="/app") as sandbox:
        seen = sandbox.run("cat b.txt; ls /data; stat -c '%u %a' /bin/sh; echo x > /app/new")
        assert seen.output.splitlines() == ["b, replaced", "new.txt", "0 755"]
        assert seen.exit_code == 0
    assert not (Path(image.rootfs) / "app/new").exists(), "the image is read-only below"


def test_whiteouts_hide_only_the_layers_below_wherever_they_stand_in_their_own(tmp_path: Path):
    """OCI: a layer's own files stay, though its whiteout or opaque marker comes after them
    in the stream (a layer is applied in one pass)."""
    upper: list[Entry] = [
        ("app/a.txt", b"a, again\n", {}),
        ("app/.wh.a.txt", b"", {}),
        ("data/mine.txt", b"mine\n", {}),
        ("data/.wh..wh..opq", b"", {}),
    ]
    folder = oci_layout(tmp_path / "layout", [layer(LOWER), layer(upper, compress=True)])
    root = Path(import_image(folder, "order:1", cache=ImageCache(tmp_path / "cache")).rootfs)
    assert (root / "app/a.txt").read_text() == "a, again\n"
    assert (root / "app/b.txt").read_text() == "b\n"
    assert sorted(p.name for p in (root / "data").iterdir()) == ["mine.txt"]
