"""`sprout image pull` against a real registry on loopback (TLS, htpasswd): tags and digests,
manifest lists, the shared blob cache, credentials, and failures that leave the cache as
it was."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sprout.images import ImageCache, ImageError
from sprout.images.blobs import blob_dir
from sprout.images.pull import pull
from sprout.images.skopeo import RegistryUnreachable
from tests.support.registry_world import BASE, Layout, Registry, cutting_proxy, layer_blob, push_app


def cache_state(cache: ImageCache) -> dict[str, bytes]:
    """Every file of the cache but its lock files, by path: what a failure must not change."""
    root = Path(os.path.realpath(cache.root))
    if not root.exists():
        return {}
    return {
        str(path.relative_to(root)): path.read_bytes() if path.is_file() else b""
        for path in sorted(root.rglob("*"))
        if not path.name.endswith(".lock") and not path.is_dir()
    }


def blobs_verify(cache: ImageCache) -> bool:
    return all(
        hashlib.sha256(path.read_bytes()).hexdigest() == path.name
        for path in blob_dir(cache).rglob("*")
        if path.is_file()
    )


def test_a_pull_by_tag_unpacks_the_image_and_records_its_digest_and_config(
    trusted: Registry, tmp_path: Path, cache: ImageCache
) -> None:
    reference = push_app(trusted, tmp_path, "acme/app", b"app 1\n")
    image = pull(reference, cache=cache)
    root = Path(image.rootfs)
    assert (root / "etc/app").read_bytes() == b"app 1\n"
    assert (root / "etc/base-release").read_bytes() == b"base 1\n"
    assert image.names == (reference,)
    assert image.source["kind"] == "registry"
    assert image.source["registry"] == trusted.host
    assert image.source["digest"].startswith("sha256:")
    assert image.source["config"]["env"] == ["PATH=/opt/app/bin:/usr/bin:/bin", "APP=1"]
    assert image.source["config"]["workdir"] == "/srv"


def test_a_pull_by_digest_gets_exactly_those_bytes_under_a_name_that_pins_them(
    trusted: Registry, tmp_path: Path, cache: ImageCache
) -> None:
    reference = push_app(trusted, tmp_path, "acme/pinned", b"first\n")
    digest = pull(reference, cache=ImageCache(tmp_path / "other")).source["digest"]
    push_app(trusted, tmp_path, "acme/pinned", b"second\n")  # the tag moves on
    pinned = pull(f"{trusted.host}/acme/pinned@{digest}", cache=cache)
    assert pinned.names == (f"{trusted.host}/acme/pinned@{digest}",)
    assert (Path(pinned.rootfs) / "etc/app").read_bytes() == b"first\n"
    assert (Path(pull(reference, cache=cache).rootfs) / "etc/app").read_bytes() == b"second\n"


def test_a_layer_two_images_share_is_downloaded_and_stored_once(
    trusted: Registry, tmp_path: Path, cache: ImageCache
) -> None:
    first = pull(push_app(trusted, tmp_path, "acme/one", b"one\n"), cache=cache)
    second = pull(push_app(trusted, tmp_path, "acme/two", b"two\n"), cache=cache)
    own_layer = len(layer_blob({"etc/app": b"two\n"})[0])
    assert first.source["fetched_bytes"] > len(BASE[0])
    assert second.source["fetched_bytes"] == own_layer
    base_blob = hashlib.sha256(BASE[0]).hexdigest()
    assert [p.name for p in blob_dir(cache).rglob(base_blob)] == [base_blob]
    assert (Path(second.rootfs) / "etc/base-release").is_file()


def test_a_zstd_layer_over_a_gzip_base_is_pulled_and_unpacked(
    trusted: Registry, tmp_path: Path, cache: ImageCache
) -> None:
    layout = Layout(tmp_path / "zstd")
    top = layer_blob({"etc/app": b"zstd 1\n", "opt/tool": os.urandom(300_000)}, zstd=True)
    layout.tag("v1", layout.image([BASE, top]))
    image = pull(trusted.push(layout, "v1", "acme/zstd"), cache=cache)
    root = Path(image.rootfs)
    assert (root / "etc/app").read_bytes() == b"zstd 1\n", "both frames of the layer"
    assert (root / "opt/tool").stat().st_size == 300_000
    assert (root / "etc/base-release").read_bytes() == b"base 1\n"


def test_a_manifest_list_gives_this_machines_image_or_the_platform_asked_for(
    trusted: Registry, tmp_path: Path, cache: ImageCache
) -> None:
    layout = Layout(tmp_path / "multi")
    images = [
        layout.image([layer_blob({"etc/arch": arch.encode()})], arch=arch)
        for arch in ("amd64", "arm64")
    ]
    layout.tag("v1", layout.index(images))
    reference = trusted.push(layout, "v1", "acme/multi")
    here = pull(reference, cache=cache)
    assert (Path(here.rootfs) / "etc/arch").read_text() == "amd64"
    assert here.source["platform"] == "linux/amd64"
    assert here.source["list_digest"] != here.source["digest"]
    arm = pull(reference, cache=ImageCache(tmp_path / "arm"), platform="linux/arm64")
    assert (Path(arm.rootfs) / "etc/arch").read_text() == "arm64"
    with pytest.raises(ImageError, match=r"no image for linux/s390x \(the registry has "):
        pull(reference, cache=cache, platform="linux/s390x")


def test_credentials_come_from_a_docker_config_and_wrong_ones_are_one_line(
    trusted: Registry, tmp_path: Path, cache: ImageCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = push_app(trusted, tmp_path, "acme/login", b"login\n")
    home = tmp_path / "home"
    trusted.auth_file(home / ".docker/config.json")
    monkeypatch.delenv("REGISTRY_AUTH_FILE")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    assert (Path(pull(reference, cache=cache).rootfs) / "etc/app").is_file()
    trusted.auth_file(home / ".docker/config.json", password="wrong")
    before = cache_state(cache)
    with pytest.raises(ImageError) as refused:
        pull(reference, cache=ImageCache(tmp_path / "fresh"))
    line = str(refused.value)
    assert "\n" not in line
    assert f"{trusted.host} refused the credentials" in line
    assert str(home / ".docker/config.json") in line
    assert cache_state(cache) == before


def test_a_corrupt_blob_is_refused_and_leaves_the_cache_as_it_was(
    trusted: Registry,
    tmp_path: Path,
    cache: ImageCache,
    capsys: pytest.CaptureFixture[str],
) -> None:
    layout = Layout(tmp_path / "corrupt")
    good, bad = layer_blob({"etc/good": b"g\n"}), layer_blob({"etc/bad": os.urandom(4096)})
    layout.tag("v1", layout.image([good, bad]))
    reference = trusted.push(layout, "v1", "acme/corrupt")
    served = trusted.blob_file("sha256:" + hashlib.sha256(bad[0]).hexdigest())
    original = served.read_bytes()
    served.write_bytes(original[:100] + bytes(b ^ 0xFF for b in original[100:200]) + original[200:])
    try:
        with pytest.raises(ImageError, match="served bytes that are not the image's") as refused:
            pull(reference, cache=cache)
    finally:
        served.write_bytes(original)
    assert "\n" not in str(refused.value)
    assert "served bytes" not in capsys.readouterr().err, "said once, by whoever asked"
    assert cache.images() == [] and cache.get(reference) is None
    assert not list((Path(os.path.realpath(cache.root)) / "pulls").glob("*"))
    assert blobs_verify(cache)  # whole blobs it verified stay, for the next pull
    assert (Path(pull(reference, cache=cache).rootfs) / "etc/bad").is_file()


def test_a_tampered_blob_in_the_cache_is_caught_when_unpacked(
    trusted: Registry, tmp_path: Path, cache: ImageCache
) -> None:
    reference = push_app(trusted, tmp_path, "acme/tamper", b"t\n")
    pull(reference, cache=ImageCache(cache.root))
    base_blob = next(blob_dir(cache).rglob(hashlib.sha256(BASE[0]).hexdigest()))
    base_blob.write_bytes(base_blob.read_bytes()[:-10] + b"0123456789")
    cache.remove(reference)
    with pytest.raises(ImageError, match="does not match its digest"):
        pull(reference, cache=cache)
    assert cache.images() == []


def test_a_registry_that_goes_down_mid_pull_is_one_line_and_leaves_the_cache_as_it_was(
    trusted: Registry, tmp_path: Path, cache: ImageCache
) -> None:
    layout = Layout(tmp_path / "big")
    layout.tag("v1", layout.image([layer_blob({"opt/huge": os.urandom(6_000_000)})]))
    trusted.push(layout, "v1", "acme/big")
    auth = Path(os.environ["REGISTRY_AUTH_FILE"])
    with cutting_proxy(trusted.host, cut_after=1_000_000) as proxy:
        trusted.host, host = proxy, trusted.host
        try:
            trusted.auth_file(auth)
            with pytest.raises(RegistryUnreachable) as down:
                pull(f"{proxy}/acme/big:v1", cache=cache)
        finally:
            trusted.host = host
    assert "\n" not in str(down.value) and proxy in str(down.value)
    assert cache.images() == []
    assert not list((Path(os.path.realpath(cache.root)) / "pulls").glob("*"))
    assert blobs_verify(cache)


def test_the_command_pulls_lists_the_digest_and_refuses_bad_input_with_one_line(
    trusted: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPROUT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPROUT_STORE_FS", "off")
    reference = push_app(trusted, tmp_path, "acme/cli", b"cli\n")
    sprout = [sys.executable, "-m", "sprout.cli"]

    def run(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*sprout, *arguments], capture_output=True, text=True, timeout=120)

    pulled = run("image", "pull", reference)
    assert pulled.returncode == 0, pulled.stderr
    assert f"{reference}: pulled sha256:" in pulled.stderr
    listed = run("image", "list")
    digest = ImageCache(tmp_path / "cache/images").get(reference)
    assert digest is not None and f"{trusted.host}@{digest.source['digest']}" in listed.stdout
    for arguments, said in (
        (("image", "pull", "Not/An:Image"), "not an image reference"),
        (("image", "pull", f"{trusted.host}/acme/none:v1"), "has no such image"),
        (("image", "pull", "127.0.0.1:1/acme/cli:v1"), "no registry answered (127.0.0.1:1"),
        (("image", "pull", reference, "--platform", "linux"), "--platform 'linux'"),
    ):
        refused = run(*arguments)
        assert refused.returncode == 2, refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0], refused.stderr


def test_a_terminal_sees_bytes_layers_and_eta_redrawn_and_a_log_one_line_per_image() -> None:

    from sprout.images.pull_progress import PullProgress, Transfer

    screen = io.StringIO()
    live = PullProgress(screen, live=True)
    live.start(Transfer("acme/app:1", total_bytes=10_000_000, layers=4))
    live.update("acme/app:1", 5_000_000, 2)
    live.finish("acme/app:1", "acme/app:1: pulled sha256:0123 (4 layers)")
    drawn = screen.getvalue()
    assert "\r" in drawn and "pulling acme/app:1: 5.0/10.0 MB, 2/4 layers" in drawn
    assert "ETA " in drawn and drawn.endswith("acme/app:1: pulled sha256:0123 (4 layers)\n")
    log = io.StringIO()
    quiet = PullProgress(log, live=False)
    quiet.start(Transfer("acme/app:1", total_bytes=10, layers=1))
    quiet.update("acme/app:1", 5, 0)
    quiet.finish("acme/app:1", "acme/app:1: pulled")
    assert log.getvalue() == "acme/app:1: pulled\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_is_one_line_and_leaves_nothing_half_pulled(
    trusted: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = Layout(tmp_path / "large")
    layout.tag("v1", layout.image([layer_blob({"opt/large": os.urandom(6_000_000)})]))
    reference = trusted.push(layout, "v1", "acme/large")
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(small)], check=True)
    try:
        monkeypatch.setenv("SPROUT_STORE_FS", "off")  # the cache stays on the small disk
        cache = ImageCache(small / "images")
        with pytest.raises(ImageError) as full:
            pull(reference, cache=cache)
        assert "\n" not in str(full.value) and "the disk is full" in str(full.value)
        assert cache.images() == [] and cache.get(reference) is None
        assert not list((small / "images/pulls").glob("*"))
        assert blobs_verify(cache)
        assert not [p for p in (small / "images").iterdir() if p.name.endswith(".tmp")]
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_gc_images_frees_the_blobs_no_remaining_image_was_pulled_with(
    trusted: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sprout.images.gc import collect
    from sprout.sandbox import note_image

    monkeypatch.setenv("SPROUT_CACHE", str(tmp_path / "machine"))
    monkeypatch.setenv("SPROUT_STORE_FS", "off")
    cache = ImageCache()
    one = pull(push_app(trusted, tmp_path, "acme/gc-one", b"one\n"), cache=cache)
    two = pull(push_app(trusted, tmp_path, "acme/gc-two", b"two\n"), cache=cache)
    (tmp_path / "run-store").mkdir()
    note_image(str(tmp_path / "run-store"), two.digest)  # a run's store stands on two
    blobs = sorted(p for p in blob_dir(cache).rglob("*") if p.is_file())
    for path in blobs:  # older than a pull under way could be
        os.utime(path, (1_000_000_000, 1_000_000_000))
    own = {f"sha256:{p.name}" for p in blobs} - set(two.source["blobs"])
    assert own and own <= set(one.source["blobs"])
    assert collect(images=True, dry_run=True).blobs == len(own)
    assert len(list(blob_dir(cache).rglob("*/*"))) == len(blobs), "dry: nothing removed"
    done = collect(images=True)
    left = {f"sha256:{p.name}" for p in blob_dir(cache).rglob("*") if p.is_file()}
    assert done.images == [one.digest] and done.blobs == len(own)
    assert left == set(two.source["blobs"])
    assert (Path(two.rootfs) / "etc/base-release").is_file()
