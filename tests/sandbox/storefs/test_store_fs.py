"""sprout's own store filesystem (btrfs on a loop image) for stores on disks that cannot clone.

Each test points the machine cache at its own temporary folder (SPROUT_CACHE) with a
small image, so it makes and mounts a store filesystem of its own, and unmounts it and
detaches its loop device afterwards; the machine's real image is never made here.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.images import ImageCache
from sprout.images.base_layers import shared_store
from sprout.images.oci import import_image
from sprout.runfolder import RunFolder
from sprout.sandbox import LayerStore, Limits, Sandbox
from sprout.sandbox.errors import BadArgument
from sprout.sandbox.storefs import btrfs
from sprout.sandbox.storefs.btrfs import clone_support, keep_room, plan
from sprout.sandbox.storefs.quota import exclusive_bytes
from sprout.sandbox.storefs.settings import configured_size
from tests.support.nobody import as_nobody
from tests.support.oci_archives import layer, oci_layout, rootfs_layer
from tests.support.requirements import require_host_image
from tests.support.suite_cache import unmount_store_filesystems

pytestmark = pytest.mark.sandbox
MIB = 1 << 20


@pytest.fixture
def storefs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The store filesystem's folder in this test's own machine cache (made on first use)."""
    require_host_image()
    if "btrfs" not in Path("/proc/filesystems").read_text() or not shutil.which("mkfs.btrfs"):
        pytest.skip("needs btrfs in the kernel and mkfs.btrfs (apt-get install btrfs-progs)")
    if clone_support(tmp_path).clones:
        pytest.skip(f"{tmp_path} clones extents already: sprout keeps layers there")
    monkeypatch.setenv("SPROUT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPROUT_STORE_SIZE", "1G")
    monkeypatch.setenv("SPROUT_STORE_FS", "auto")
    root = tmp_path / "cache" / "storefs"
    try:
        yield root
    finally:
        unmount_store_filesystems(root)


def _big_files(folder: Path, size: int) -> Path:
    folder.mkdir()
    with open(folder / "big", "wb") as handle:
        handle.write(os.urandom(MIB) * (size // MIB))
    return folder


def _append_one_byte(sandbox: Sandbox, path: str, size: int) -> str:
    """Append one byte to the `size`-byte file `path` of a lower layer and seal the turn;
    the new checkpoint, whose stored bytes the caller checks (what the append cost is a
    benchmark's figure, `sprout bench sandbox`, not a timed test's)."""
    appended = sandbox.run(f"printf x >> {path} && stat -c %s {path}")
    checkpoint = sandbox.checkpoint()
    assert appended.output == f"{size + 1}\n"
    return checkpoint


def test_a_run_on_a_disk_that_cannot_clone_keeps_its_layers_on_sprouts_btrfs(storefs, tmp_path):
    run = RunFolder.create_new(tmp_path / "run")
    try:
        layers = tmp_path / "run" / "layers"
        assert layers.is_symlink() and os.readlink(layers).startswith(f"{storefs}/mnt/stores/")
        assert stat.S_IMODE(os.stat(storefs).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(storefs / "btrfs.img").st_mode) == 0o600
        assert os.stat(storefs / "btrfs.img").st_blocks * 512 < 100 * MIB, "not sparse"
        assert run.layers.capped and clone_support(layers).clones
        files = _big_files(tmp_path / "files", 200 * MIB)
        with Sandbox.create(run.layers, files=files) as sandbox:
            checkpoint = _append_one_byte(sandbox, "big", 200 * MIB)
        stored = exclusive_bytes(os.path.join(run.layers.path, "s", checkpoint))
        assert stored <= 64 * 1024, f"a 1-byte append stored {stored} bytes"
    finally:
        run.close()


def test_a_base_layer_adopted_by_two_run_stores_shares_its_blocks(storefs, tmp_path):
    runs = [RunFolder.create_new(tmp_path / name) for name in ("one", "two")]
    try:
        shared = shared_store(runs[0].layers)
        assert shared is not None
        mount_point = os.path.realpath(storefs / "mnt")
        assert os.path.realpath(shared.path).startswith(mount_point + "/")
        with Sandbox.create(shared, files=_big_files(tmp_path / "files", 100 * MIB)) as base:
            base_id = base.checkpoint()
        subprocess.run(["btrfs", "filesystem", "sync", str(storefs / "mnt")], check=True)
        used = shutil.disk_usage(storefs / "mnt").used
        for run in runs:
            run.layers.adopt(shared, base_id)
            with Sandbox.fork(run.layers, base_id) as fork:
                assert fork.run("printf x >> big && stat -c %s big").output == f"{100 * MIB + 1}\n"
                fork.checkpoint()
        subprocess.run(["btrfs", "filesystem", "sync", str(storefs / "mnt")], check=True)
        grown = shutil.disk_usage(storefs / "mnt").used - used
        assert grown < 20 * MIB, f"two forks of a shared base layer took {grown} bytes"
        targets = {os.path.realpath(os.path.join(r.layers.path, "l", base_id)) for r in runs}
        assert targets == {os.path.realpath(shared.diff_dir(base_id))}
    finally:
        for run in runs:
            run.close()


def test_a_sandbox_on_sprouts_store_is_capped_and_sees_none_of_it(storefs, tmp_path):
    run = RunFolder.create_new(tmp_path / "run")
    try:
        canary = storefs / "mnt" / "canary-e1f0"
        canary.write_text("store filesystem canary\n")
        reads = [
            f"cat {canary}",
            f"ls -a {storefs / 'mnt'} {storefs}",
            f"head -c 100 {storefs / 'btrfs.img'}",
        ]
        with Sandbox.create(run.layers, limits=Limits(disk_bytes=20 * MIB)) as sandbox:
            refused = [sandbox.run(command).exit_code for command in reads]
            found = sandbox.run("grep -rl 'store filesystem canary' /root /tmp /etc", timeout=60)
            mounts = sandbox.run("cat /proc/self/mountinfo").output
            hog = sandbox.run("dd if=/dev/zero of=filler bs=1M count=60 2>&1", timeout=60)
        assert 0 not in refused and found.output == ""
        assert "btrfs" not in mounts and "storefs" not in mounts, mounts
        assert hog.exit_code != 0 and "Disk quota exceeded" in hog.output
    finally:
        run.close()


CRASH = r"""
import sys, time
from sprout.sandbox import LayerStore, Sandbox
store = LayerStore(sys.argv[1])
sandbox = Sandbox.fork(store, sys.argv[2])
sandbox.run("echo unsealed > turn2 && echo changed > turn1")
print(sandbox.upper, flush=True)
time.sleep(600)
"""


def test_a_crash_mid_turn_on_sprouts_store_loses_no_sealed_checkpoint(storefs, tmp_path):
    run = RunFolder.create_new(tmp_path / "run")
    try:
        with Sandbox.create(run.layers) as sandbox:
            sandbox.run("echo sealed > turn1")
            sealed = sandbox.checkpoint()
        child = subprocess.Popen(
            [sys.executable, "-c", CRASH, run.layers.path, sealed],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        upper = child.stdout.readline().strip()
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        swept = run.layers.sweep()
        assert upper in swept.debris, (upper, swept.debris)
        assert not os.path.lexists(os.path.join(run.layers.path, "s", upper))
        with Sandbox.fork(run.layers, sealed) as fork:
            assert fork.run("cat turn1; ls").output == "sealed\nturn1\n"
    finally:
        run.close()


def test_a_store_filesystem_found_unmounted_is_mounted_again(storefs, tmp_path):
    run = RunFolder.create_new(tmp_path / "run")
    with Sandbox.create(run.layers) as sandbox:
        sandbox.run("echo kept > f")
        checkpoint = sandbox.checkpoint()
    run.close()
    unmount_store_filesystems(storefs)  # as a reboot leaves it
    again = RunFolder.open(tmp_path / "run")
    try:
        assert os.path.ismount(storefs / "mnt")
        assert again.layers.read(checkpoint, "/workspace/f") == b"kept\n"
    finally:
        again.close()


def test_the_store_filesystem_grows_when_it_runs_low(storefs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPROUT_STORE_SIZE", "300M")
    run = RunFolder.create_new(tmp_path / "run")
    run.close()
    mount_point = str(storefs / "mnt")
    before = os.statvfs(mount_point)
    with open(os.path.join(mount_point, "filler"), "wb") as handle:
        handle.write(b"\1" * (200 * MIB))
    os.sync()
    keep_room(mount_point)
    after = os.statvfs(mount_point)
    assert os.path.getsize(storefs / "btrfs.img") == 600 * MIB
    assert after.f_blocks * after.f_frsize > 1.5 * before.f_blocks * before.f_frsize


def test_off_keeps_layers_in_the_run_folder(storefs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPROUT_STORE_FS", "off")
    run = RunFolder.create_new(tmp_path / "run")
    run.close()
    layers = tmp_path / "run" / "layers"
    assert layers.is_dir() and not layers.is_symlink()
    assert not storefs.exists()


def test_bad_settings_name_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("SPROUT_STORE_SIZE", "lots")
    with pytest.raises(BadArgument, match="SPROUT_STORE_SIZE: expected a size"):
        configured_size(1 << 40)
    monkeypatch.setenv("SPROUT_STORE_SIZE", "10M")
    with pytest.raises(BadArgument, match="SPROUT_STORE_SIZE: '10M' is under"):
        configured_size(1 << 40)
    monkeypatch.setenv("SPROUT_STORE_SIZE", "2GiB")
    assert configured_size(1 << 40) == 2 << 30
    monkeypatch.setenv("SPROUT_STORE_FS", "yes")  # refused whoever runs it, on any disk
    with pytest.raises(BadArgument, match=r"^SPROUT_STORE_FS: expected auto or off, got 'yes'$"):
        plan(tmp_path / "store")
    monkeypatch.setenv("SPROUT_STORE_FS", "auto")
    monkeypatch.setenv("SPROUT_STORE_SIZE", "lots")  # though a placement never reads the size
    with pytest.raises(BadArgument, match=r"^SPROUT_STORE_SIZE: expected a size"):
        plan(tmp_path / "store")


def _refusal(call: Callable[[], object]) -> str:
    """The line of the BadArgument `call` raises, which ends a command with exit code 2."""
    with pytest.raises(BadArgument) as refused:
        call()
    assert refused.value.exit_code == 2
    return str(refused.value)


def test_a_bad_size_is_refused_once_the_image_exists_too(storefs, tmp_path, monkeypatch, capsys):
    """The size is used only when the image is made, and checked every time it is read: a
    new store, the mount of an image that exists (mounted, and after a reboot) and `sprout
    doctor` all refuse SPROUT_STORE_SIZE=banana with its one line, nothing made."""
    LayerStore(tmp_path / "first")  # makes the image
    assert (storefs / "btrfs.img").is_file() and os.path.ismount(storefs / "mnt")
    monkeypatch.setenv("SPROUT_STORE_SIZE", "banana")
    line = "SPROUT_STORE_SIZE: expected a size such as 64G or 512M, got 'banana'"
    assert _refusal(lambda: LayerStore(tmp_path / "second")) == line
    assert _refusal(btrfs.mount) == line  # mounted
    unmount_store_filesystems(storefs)  # as a reboot leaves it: the image, not mounted
    assert _refusal(btrfs.mount) == line
    assert not (tmp_path / "second").exists() and not os.path.ismount(storefs / "mnt")
    assert main(["doctor", "--store", str(tmp_path / "third")]) == 2
    assert capsys.readouterr().err == f"sprout doctor: {line}\n"


ROOTLESS = r"""
import os, sys
from sprout.runfolder import RunFolder
RunFolder.create_new(sys.argv[1]).close()
print(os.path.islink(os.path.join(sys.argv[1], "layers")))
"""


def test_rootless_runs_keep_the_plain_store_and_say_so(nobody_env, nobody_dir):
    if clone_support(nobody_dir).clones:
        pytest.skip(f"{nobody_dir} clones extents: there is nothing to say")
    done = as_nobody([sys.executable, "-c", ROOTLESS, str(nobody_dir / "run")], nobody_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False\n"
    assert "does not clone extents" in done.stderr and "rootless" in done.stderr


def test_doctor_says_what_a_store_that_cannot_clone_costs(storefs, tmp_path):
    doctor = subprocess.run(
        [sys.executable, "-m", "sprout.cli", "doctor", "--store", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "does not clone extents" in doctor.stdout
    assert "stores the whole file again" in doctor.stdout
    assert "sprout keeps layers on its own btrfs store filesystem" in doctor.stdout
    assert not storefs.exists(), "doctor made the store filesystem"


def test_gc_frees_the_layers_of_a_run_folder_deleted_with_rm_only_when_told(
    storefs, tmp_path, capsys
):
    from sprout.cli import main
    from sprout.sandbox.storefs.owners import orphan_stores

    kept, gone = (RunFolder.create_new(tmp_path / name) for name in ("kept", "gone"))
    for run in (kept, gone):
        with Sandbox.create(run.layers) as sandbox:
            sandbox.run("head -c 5M /dev/urandom > data")
            sandbox.checkpoint()
        run.close()
    target = os.path.realpath(tmp_path / "gone" / "layers")
    shutil.rmtree(tmp_path / "gone")
    assert [orphan.owner for orphan in orphan_stores(str(storefs))] == [
        str(tmp_path / "gone" / "layers")
    ]

    assert main(["gc", "-v"]) == 0
    said = capsys.readouterr().out
    assert f"  the layers of {tmp_path / 'gone' / 'layers'} (its link is gone, kept" in said
    assert "kept 1 stores (5.3 MB) whose run folder is gone" in said and os.path.isdir(target)
    assert main(["gc", "--orphan", "--dry-run"]) == 0
    assert "1 stores of deleted runs (--dry-run" in capsys.readouterr().out
    assert os.path.isdir(target)
    assert main(["gc", "--orphan"]) == 0
    freed = float(capsys.readouterr().out.split()[1])
    assert freed >= 5.0, "the 5 MB the deleted run's layer held"
    assert not os.path.exists(target) and orphan_stores(str(storefs)) == []
    assert os.path.isdir(os.path.realpath(tmp_path / "kept" / "layers")), "a live run stays"


def test_a_moved_run_folder_is_its_stores_owner_once_opened_again(storefs, tmp_path, capsys):
    from sprout.cli import main
    from sprout.sandbox.storefs.owners import orphan_stores

    run = RunFolder.create_new(tmp_path / "before")
    run.close()
    (tmp_path / "before").rename(tmp_path / "after")
    assert [o.owner for o in orphan_stores(str(storefs))] == [str(tmp_path / "before" / "layers")]
    RunFolder.open(tmp_path / "after").close()
    assert orphan_stores(str(storefs)) == []
    assert main(["gc", "--orphan"]) == 0
    assert "0 stores of deleted runs" in capsys.readouterr().out
    assert (tmp_path / "after" / "layers" / "store.json").is_file()


def test_a_deleted_run_still_open_somewhere_keeps_its_layers(storefs, tmp_path):
    from sprout.durable import try_lock
    from sprout.sandbox.storefs.owners import orphan_stores, remove_orphan_store

    RunFolder.create_new(tmp_path / "gone").close()
    target = os.path.realpath(tmp_path / "gone" / "layers")
    shutil.rmtree(tmp_path / "gone")
    [orphan] = orphan_stores(str(storefs))
    held = try_lock(os.path.join(target, "lock"), shared=True)  # as a process using it holds
    assert held is not None
    try:
        assert remove_orphan_store(orphan) is False and os.path.isdir(target)
    finally:
        held.release()
    assert remove_orphan_store(orphan) is True and not os.path.exists(target)


def _tiny_image(folder: Path, rootfs: Path, big: int = 0) -> Path:
    """An OCI layout of the tests' minimal root filesystem, with a `big`-byte /data/big."""
    extra = [("data", None, {}), ("data/big", os.urandom(MIB) * (big // MIB), {})]
    return oci_layout(folder, [rootfs_layer(rootfs), layer(extra if big else [])])


def _doctor() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "sprout.cli", "doctor"], capture_output=True, text=True, timeout=120
    )
    return done.stdout


def test_a_new_image_cache_lives_on_sprouts_store_so_a_write_to_an_image_file_clones(
    storefs, tmp_path, minimal_rootfs
):
    image = import_image(_tiny_image(tmp_path / "layout", minimal_rootfs, 50 * MIB), "tiny:1")
    images = tmp_path / "cache" / "images"
    assert images.is_symlink() and os.readlink(images).startswith(f"{storefs}/mnt/stores/")
    assert image.rootfs == str(images / image.digest / "rootfs")
    assert clone_support(image.rootfs).clones
    run = RunFolder.create_new(tmp_path / "run")
    try:
        with Sandbox.create(run.layers, image=image.rootfs) as sandbox:
            checkpoint = _append_one_byte(sandbox, "/data/big", 50 * MIB)
        stored = exclusive_bytes(os.path.join(run.layers.path, "s", checkpoint))
        assert stored <= 64 * 1024, f"a 1-byte append to an image file stored {stored} bytes"
        assert run.layers.layer(checkpoint).size <= 4096, "the layer owns one block"
    finally:
        run.close()
    assert "image cache:" not in _doctor(), "a cache on the store filesystem needs no move"


def test_an_image_cache_on_the_plain_disk_stays_there_until_moved_by_doctors_line(
    storefs, tmp_path, minimal_rootfs
):
    images = tmp_path / "cache" / "images"
    images.mkdir(parents=True)  # as a cache made before the store filesystem was
    image = import_image(_tiny_image(tmp_path / "layout", minimal_rootfs), "tiny:1")
    assert images.is_dir() and not images.is_symlink() and not storefs.exists()
    assert image.rootfs == str(images / image.digest / "rootfs")
    said = _doctor()
    assert f"image cache: {images} stays on the plain disk" in said
    assert not storefs.exists(), "doctor made the store filesystem"
    [move] = [line[4:] for line in said.splitlines() if line.startswith("  $ ")]

    RunFolder.create_new(tmp_path / "run").close()  # a run as root mounts the store filesystem
    done = subprocess.run(["sh", "-c", move], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert images.is_symlink() and os.path.realpath(images).startswith(f"{storefs}/mnt/")
    assert ImageCache().get("tiny:1") == image and clone_support(image.rootfs).clones
    run = RunFolder.open(tmp_path / "run")
    try:
        with Sandbox.create(run.layers, image=image.rootfs) as sandbox:
            assert sandbox.run("cat /etc/hostname").output == "image\n"
    finally:
        run.close()
    assert "image cache:" not in _doctor()


def test_a_layer_store_made_through_the_api_is_placed_as_a_runs_is(storefs, tmp_path):
    """`LayerStore(path)` in a trainer's environment or a notebook gets what `sprout run`
    gets: block-level layers and each sandbox's disk capped."""
    store = LayerStore(tmp_path / "runs" / "layers")
    assert store.placement is not None and store.placement.own_fs
    assert os.path.realpath(store.path).startswith(f"{storefs}/mnt/stores/")
    assert store.capped and clone_support(store.path).clones
    files = _big_files(tmp_path / "files", 300 * MIB)
    with Sandbox.create(store, files=files, limits=Limits(disk_bytes=64 * MIB)) as sandbox:
        checkpoint = _append_one_byte(sandbox, "big", 300 * MIB)
        image = storefs / "btrfs.img"
        host_before = os.stat(image).st_blocks * 512
        hog = sandbox.run("dd if=/dev/zero of=filler bs=1M count=200 2>&1", timeout=60)
        subprocess.run(["btrfs", "filesystem", "sync", str(storefs / "mnt")], check=True)
        host_grown = os.stat(image).st_blocks * 512 - host_before
    stored = exclusive_bytes(os.path.join(store.path, "s", checkpoint))
    assert stored <= 2 * MIB, f"a 1-byte append stored {stored} bytes"
    assert hog.exit_code != 0 and "Disk quota exceeded" in hog.output
    assert host_grown < 100 * MIB, (
        f"the store's image took {host_grown} more bytes of the host's disk"
    )


def test_place_false_and_the_switch_keep_an_api_store_where_it_is(storefs, tmp_path, monkeypatch):
    kept = LayerStore(tmp_path / "kept", place=False)
    assert not os.path.islink(kept.path) and kept.placement is None and not kept.capped
    monkeypatch.setenv("SPROUT_STORE_FS", "off")
    off = LayerStore(tmp_path / "off")
    assert not os.path.islink(off.path) and off.placement is not None
    assert not off.placement.own_fs and "SPROUT_STORE_FS=off" in off.placement.note
    assert not storefs.exists()
