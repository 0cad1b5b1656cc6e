"""Fixtures the sandbox tests share. Running sandboxes as an unprivileged user: the tests
run as root and switch to `nobody` for a small script that prints what it saw as JSON.
A btrfs filesystem of a test's own (a store whose files clone, with quotas or not)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_host_image
from tests.sandbox.net_world import World, make_world

NOBODY = 65534


def switch_user_prefix() -> list[str]:
    """The command prefix that runs a program as `nobody`, or a skip."""
    if os.geteuid() != 0:
        pytest.skip("switching to an unprivileged user needs root")
    if shutil.which("setpriv"):
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    if shutil.which("su"):
        return ["su", "nobody", "-s", "/bin/sh", "-c"]
    pytest.skip("neither setpriv nor su is installed")


def as_nobody(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    prefix = switch_user_prefix()
    if prefix[0] == "su":
        assignments = [f"{k}={v}" for k, v in env.items()]
        argv = [*prefix, shlex.join(["env", "-i", *assignments, *argv])]
    else:
        argv = [*prefix, *argv]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


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


def run_script(script: str, args: list[str], env: dict[str, str]) -> str:
    result = as_nobody([sys.executable, "-c", script, *args], env)
    assert result.returncode == 0, f"the script failed as nobody:\n{result.stderr}"
    return result.stdout


@pytest.fixture
def own_image(nobody_dir: Path, minimal_rootfs: Path) -> Path:
    """The user's own image: with one uid mapped, files of other owners are read-only inside."""
    image = nobody_dir / "rootfs"
    shutil.copytree(minimal_rootfs, image, symlinks=True)
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(image)], check=True)
    return image


def run_in_image(script: str, image: Path, nobody_dir: Path, marker: str, env: dict[str, str]):
    store_path = nobody_dir / "store"
    return json.loads(run_script(script, [str(image), str(store_path), marker], env))


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
        subprocess.run(["umount", str(mount_point)], check=True)  # the loop device goes too


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
        subprocess.run(["umount", str(mount_point)], check=True)


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


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """The network tests' world of namespaces (net_world.py), gone after the test."""
    require_host_image()
    made = make_world(tmp_path / "world")
    try:
        yield made
    finally:
        made.close()
