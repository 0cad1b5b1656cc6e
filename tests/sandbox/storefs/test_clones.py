"""A store on a filesystem that clones (btrfs, and XFS with reflinks, on a loop image of the
test's own): a layer's size is the blocks it owns, a squash clones rather than copies, and
GC frees what it says."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox

pytestmark = pytest.mark.sandbox

MIB = 1024**2


def big_file_folder(tmp_path: Path, mib: int) -> Path:
    """A folder holding `big`, `mib` MiB that no filesystem can compress or dedupe."""
    files = tmp_path / "files"
    files.mkdir()
    with open(files / "big", "wb") as handle:
        for _ in range(mib):
            handle.write(os.urandom(MIB))
    return files


def free_bytes(mount_point: Path) -> int:
    """Bytes free to users once the filesystem has committed and cleaned what was deleted."""
    kind = subprocess.run(["stat", "-f", "-c", "%T", str(mount_point)], capture_output=True)
    if kind.stdout.strip() == b"btrfs":
        subprocess.run(["btrfs", "subvolume", "sync", str(mount_point)], check=True)
        subprocess.run(["btrfs", "filesystem", "sync", str(mount_point)], check=True)
    else:
        subprocess.run(["sync", "-f", str(mount_point)], check=True)
    found = os.statvfs(mount_point)
    return found.f_bavail * found.f_frsize


def test_a_one_byte_append_to_a_big_lower_file_owns_one_block(cloning, tmp_path):
    store = LayerStore(cloning / "store")
    with Sandbox.create(store, files=big_file_folder(tmp_path, 200)) as sandbox:
        base = sandbox.parent
        assert sandbox.run("printf x >> big && wc -c < big").output == f"{200 * MIB + 1}\n"
        appended = store.layer(sandbox.checkpoint())
    assert store.layer(base).size >= 200 * MIB
    assert appended.size <= 64 * 1024, f"a 1-byte append reports {appended.size} bytes"


def test_a_store_that_does_not_flush_still_counts_each_append(cloning, tmp_path):
    """Data not yet written back has no extent to map: the size must not read it as 0."""
    store = LayerStore(cloning / "store", durable=False)
    with Sandbox.create(store, files=big_file_folder(tmp_path, 20)) as sandbox:
        sizes = []
        for _ in range(6):
            sandbox.run("printf x >> big")
            sizes.append(store.layer(sandbox.checkpoint()).size)
    assert all(0 < size <= 64 * 1024 for size in sizes), sizes


def test_gc_frees_what_it_reports(cloning, tmp_path):
    store = LayerStore(cloning / "store")
    with Sandbox.create(store) as sandbox:
        base = sandbox.parent
        sandbox.run("head -c 100M /dev/urandom > big")
        sandbox.checkpoint()
        sandbox.run("printf x >> big")  # a clone of the layer below, GC's to free too
        sandbox.checkpoint()
    with Sandbox.fork(store, base) as fork:  # a branch GC keeps
        fork.run("head -c 10M /dev/urandom > small")
        kept = fork.checkpoint()
    before = free_bytes(cloning)
    reported = store.gc(keep=[kept])
    freed = free_bytes(cloning) - before
    assert reported >= 100 * MIB
    assert abs(reported - freed) <= MIB, f"GC said {reported} bytes, the disk got {freed}"


def test_gc_keeps_counting_what_a_kept_layer_still_shares(cloning, tmp_path):
    store = LayerStore(cloning / "store")
    with Sandbox.create(store, files=big_file_folder(tmp_path, 50)) as sandbox:
        sandbox.run("printf x >> big")
        kept = sandbox.checkpoint()
    with Sandbox.fork(store, kept) as fork:
        fork.run("cp --reflink=always big copy")  # the copy shares every block of `big`
        fork.checkpoint()
    reported = store.collect(keep=[kept], dry_run=True).bytes_freed
    assert reported < MIB, f"GC would say {reported} bytes for a layer of shared blocks"


def test_gc_does_not_count_what_an_adopted_base_layer_shares(cloning, tmp_path):
    cache = LayerStore(cloning / "cache")
    with Sandbox.create(cache, files=big_file_folder(tmp_path, 50)) as sandbox:
        base = sandbox.parent
    store = LayerStore(cloning / "run")
    store.adopt(cache, base)
    with Sandbox.fork(store, base) as fork:
        fork.run("printf x >> big")  # a copy-up that clones the other store's file
        fork.checkpoint()
    reported = store.gc(keep=[base])
    assert reported < MIB, f"GC said {reported} bytes for a 1-byte append"


def test_a_squash_across_subvolumes_clones_the_stack(btrfs_with_quotas, tmp_path):
    store = LayerStore(btrfs_with_quotas / "store", max_stack=3)
    assert store.capped
    with Sandbox.create(store, files=big_file_folder(tmp_path, 200)) as sandbox:
        sandbox.checkpoint()
        before = free_bytes(btrfs_with_quotas)
        for turn in range(3):
            sandbox.run(f"echo {turn} > turn{turn}")
            last = store.layer(sandbox.checkpoint())
        used = before - free_bytes(btrfs_with_quotas)
    assert last.flat is not None, "no squash"
    flat = store.layer(last.flat)
    big = os.path.join(store.diff_dir(flat.id), "workspace", "big")
    assert os.stat(big).st_nlink == 1, "linked, not cloned"
    assert flat.size < MIB and used < 10 * MIB, f"the squash took {used} bytes"
