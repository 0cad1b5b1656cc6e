"""Fixtures the sandbox tests share, in each of its sub-packages' folders: what sandboxes run
as `nobody` need (a home, an environment, a folder and an image of its own;
tests/support/nobody.py runs them), and a btrfs or XFS filesystem of a test's own (a store
whose files clone, with quotas or not). The network tests' world is network/conftest.py's."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sprout.sandbox.layers import flusher
from tests.support.nobody import NOBODY, as_nobody
from tests.support.requirements import require_host_image


@pytest.fixture(scope="module")
def nobody_home(shared_tmp: Path) -> Path:
    """A home for `nobody`, where the helper gets built once for this module's tests."""
    home = shared_tmp / "nobody-home"
    home.mkdir(exist_ok=True)
    os.chown(home, NOBODY, NOBODY)
    return home


@pytest.fixture
def nobody_env(nobody_home: Path, overlay_available: None) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(nobody_home),
        "SPROUT_CACHE": str(nobody_home / "cache"),
        "LANG": "C.UTF-8",
    }
    if shutil.which("unshare"):
        probe = as_nobody(["unshare", "--user", "--map-root-user", "true"], env)
        if probe.returncode != 0:
            pytest.skip(f"unprivileged user namespaces are disabled: {probe.stderr.strip()}")
    elif Path("/proc/sys/user/max_user_namespaces").read_text().strip() == "0":
        pytest.skip("unprivileged user namespaces are disabled (user.max_user_namespaces=0)")
    return env


@pytest.fixture
def nobody_dir(shared_tmp: Path, request: pytest.FixtureRequest) -> Path:
    """A directory `nobody` owns, fresh for each test."""
    path = shared_tmp / request.node.name.replace("/", "_")
    path.mkdir()
    os.chown(path, NOBODY, NOBODY)
    return path


@pytest.fixture
def own_image(nobody_dir: Path, minimal_rootfs: Path) -> Path:
    """The user's own image: with one uid mapped, files of other owners are read-only inside."""
    image = nobody_dir / "rootfs"
    shutil.copytree(minimal_rootfs, image, symlinks=True)
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(image)], check=True)
    return image


def unmount_test_filesystem(mount_point: Path) -> None:
    """Unmount a test's own filesystem (its loop device goes too) once the flusher holds
    nothing of it open: a checkpoint's flush may still run when its test ends."""
    assert flusher.drain(timeout=120), f"layers on {mount_point} still flushing after 120 s"
    subprocess.run(["umount", str(mount_point)], check=True)


def loop_btrfs(tmp_path: Path, *, quotas: bool) -> Iterator[Path]:
    """A btrfs filesystem on a loop image of this test's own, unmounted after."""
    require_host_image()
    if "btrfs" not in Path("/proc/filesystems").read_text() or not shutil.which("mkfs.btrfs"):
        pytest.skip("needs btrfs in the kernel and mkfs.btrfs (apt-get install btrfs-progs)")
    image, mount_point = tmp_path / "store.img", tmp_path / "mnt"
    with open(image, "wb") as handle:
        handle.truncate(1024**3)  # sparse: it holds what the test writes
    mount_point.mkdir()
    subprocess.run(["mkfs.btrfs", "-q", "-f", str(image)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mount_point)], check=True)
    try:
        if quotas:
            subprocess.run(["btrfs", "quota", "enable", str(mount_point)], check=True)
        yield mount_point
    finally:
        unmount_test_filesystem(mount_point)


def loop_xfs(tmp_path: Path) -> Iterator[Path]:
    """An XFS filesystem with reflinks on a loop image of this test's own, unmounted after."""
    require_host_image()
    if "xfs" not in Path("/proc/filesystems").read_text() or not shutil.which("mkfs.xfs"):
        pytest.skip("needs XFS in the kernel and mkfs.xfs (apt-get install xfsprogs)")
    image, mount_point = tmp_path / "store.img", tmp_path / "mnt"
    with open(image, "wb") as handle:
        handle.truncate(1024**3)
    mount_point.mkdir()
    subprocess.run(
        ["mkfs.xfs", "-q", "-f", "-m", "reflink=1", str(image)], check=True, capture_output=True
    )
    subprocess.run(["mount", "-o", "loop", str(image), str(mount_point)], check=True)
    try:
        yield mount_point
    finally:
        unmount_test_filesystem(mount_point)


@pytest.fixture(params=["btrfs", "xfs"])
def cloning(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A filesystem that clones extents, without quotas: btrfs, then XFS with reflinks."""
    if request.param == "xfs":
        yield from loop_xfs(tmp_path)
    else:
        yield from loop_btrfs(tmp_path, quotas=False)


@pytest.fixture
def btrfs(tmp_path: Path) -> Iterator[Path]:
    """A btrfs filesystem without quotas: a store there keeps its layers in plain folders."""
    yield from loop_btrfs(tmp_path, quotas=False)


@pytest.fixture
def btrfs_with_quotas(tmp_path: Path) -> Iterator[Path]:
    """A btrfs filesystem with quotas: a root store there makes each layer a subvolume."""
    yield from loop_btrfs(tmp_path, quotas=True)
