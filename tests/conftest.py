"""The suite's pytest plugin and the fixtures tests of every folder use: layer stores for each
backend, a minimal root filesystem, process scans, the world (layer store, SQLite store,
tree, a task's checkpoint) the actor, role and tree tests play in, and, from tests/support,
the fixtures of more than one folder (the tiny model, a machine cache with an image).

As a plugin it runs the root tests on a store filesystem of the suite's own, shares the
cores among the pytest-xdist workers' threads (tests/support/worker_threads.py), holds every
test to the run invariant (each checkpoint a run references still opens), and fails a whole
run that never collected a test module on disk.

Sandbox tests need kernel overlayfs and namespaces. Where the machine lacks
them they skip with the reason, except under SPROUT_REQUIRE_SANDBOX=1 (set by
`make test` on a machine that has them), where a skip would hide a broken
sandbox and so fails instead.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sprout.sandbox import LayerStore
from tests.support.processes import ProcessWatch
from tests.support.requirements import require_host_image, require_overlay
from tests.support.rootfs import build_rootfs
from tests.support.run_invariant import run_folders, unopened_checkpoints
from tests.support.suite_cache import (
    SUITE_STORE_SIZE,
    make_suite_cache,
    mount_without_barriers,
    remove_suite_cache,
    store_fs_unavailable_reason,
    unmount_store_filesystems,
)
from tests.support.tiny_model import tiny_model_path  # noqa: F401  (a fixture)
from tests.support.tool_image import tool_cache  # noqa: F401  (a fixture)
from tests.support.worker_threads import share_cores

if TYPE_CHECKING:
    from tests.support.world import World

_SUITE_CACHE: Path | None = None
"""The suite's own machine cache, where its store filesystem is (tests/support/suite_cache.py)."""
_STORE_FS_NOTE = ""
_THREADS_NOTE = "as the libraries choose (no pytest-xdist workers)"


def pytest_configure(config: pytest.Config) -> None:
    """Root tests run on the store filesystem, as every root user's stores do: in a
    machine cache of the suite's own (one per pytest-xdist worker), never the machine's.
    SPROUT_STORE_FS=off given to pytest runs them on the plain disk instead."""
    global _SUITE_CACHE, _STORE_FS_NOTE, _THREADS_NOTE
    os.environ["CONTAINERS_REGISTRIES_CONF"] = str(Path(__file__).with_name("registries.conf"))
    workers = getattr(config.option, "numprocesses", None)
    if workers and not hasattr(config, "workerinput"):
        _STORE_FS_NOTE = "each pytest-xdist worker makes its own"
        if isinstance(workers, int):  # before the workers start, which inherit it
            _THREADS_NOTE = share_cores(workers)
        return  # the controller runs no test
    if os.environ.get("SPROUT_STORE_FS", "auto") == "off":
        _STORE_FS_NOTE = "off (SPROUT_STORE_FS=off)"
        return
    reason = store_fs_unavailable_reason()
    if reason is not None:
        _STORE_FS_NOTE = f"not used: {reason}"
        if os.geteuid() == 0:
            os.environ["SPROUT_STORE_FS"] = "off"
        return
    _SUITE_CACHE = make_suite_cache()
    os.environ["SPROUT_CACHE"] = str(_SUITE_CACHE)
    os.environ.setdefault("SPROUT_STORE_SIZE", SUITE_STORE_SIZE)
    mount_without_barriers()
    _STORE_FS_NOTE = f"on, in the suite's own cache {_SUITE_CACHE}"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SUITE_CACHE is not None:
        remove_suite_cache(_SUITE_CACHE)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [
        f"sprout's store filesystem: {_STORE_FS_NOTE}",
        f"threads per worker: {_THREADS_NOTE}",
    ]


@pytest.fixture(autouse=True)
def _every_checkpoint_still_opens(
    request: pytest.FixtureRequest, _no_store_filesystem_left: None
) -> Iterator[None]:
    """After each test, every checkpoint of each run folder it made still opens
    (tests/support/run_invariant.py), unless it is marked `checkpoints_elsewhere` with its
    reason. It ends before `_no_store_filesystem_left` does: opening a store whose store
    filesystem the test unmounted mounts it again (as after a reboot)."""
    yield
    tmp_path = request.node.funcargs.get("tmp_path")
    if tmp_path is None or request.node.get_closest_marker("checkpoints_elsewhere"):
        return
    lost = {str(f): unopened_checkpoints(f) for f in run_folders(tmp_path)}
    lost = {folder: problems for folder, problems in lost.items() if problems}
    if lost:
        shown = "; ".join(f"{folder}: {', '.join(p[:3])}" for folder, p in lost.items())
        pytest.fail(f"checkpoints that sprout.db references no longer open: {shown}")


@pytest.fixture(autouse=True)
def _no_store_filesystem_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A test that points SPROUT_CACHE at a folder of its own and makes a store filesystem
    there has it unmounted (and its loop device detached) when it ends."""
    yield
    unmount_store_filesystems(tmp_path_factory.getbasetemp())


COPY_WARNING = "ignore:sprout. the copy sandbox backend gives NO isolation:RuntimeWarning"
"""The copy backend warns once per process; test_copy_backend.py checks the warning itself."""

_COLLECTED: set[str] = set()
"""Test modules pytest collected (or skipped whole) in this session, by node id."""


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.nodeid.endswith(".py"):
        _COLLECTED.add(report.nodeid)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A whole run (no paths given) collects every test module under tests/: pytest leaves
    out folders it takes for build output (`dist`, `build`), and tests that never run
    pass by silence. So a module it never looked at fails the run instead."""
    config = session.config
    if config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
        return
    root = config.rootpath
    on_disk = {str(p.relative_to(root)) for p in (root / "tests").rglob("test_*.py")}
    missing = sorted(on_disk - _COLLECTED)
    if missing:
        raise pytest.UsageError(f"test modules pytest never collected: {', '.join(missing)}")


@pytest.fixture
def overlay_available() -> None:
    """Skips (or fails, see `require_overlay`) unless the overlay backend can run here."""
    require_overlay()


def _new_overlay_store(path: Path) -> LayerStore:
    require_host_image()
    store = LayerStore(path)
    assert store.mode == "root", "a root process with overlayfs should get a root-mode store"
    return store


@pytest.fixture
def overlay_store(tmp_path: Path) -> LayerStore:
    """A fresh overlay-mode layer store (tests using it run over the host image)."""
    return _new_overlay_store(tmp_path / "store")


@pytest.fixture(
    params=[
        pytest.param("overlay", marks=pytest.mark.sandbox),
        pytest.param("copy", marks=pytest.mark.filterwarnings(COPY_WARNING)),
    ]
)
def layers(request: pytest.FixtureRequest, tmp_path: Path) -> LayerStore:
    """A fresh layer store of each backend, for behaviour both promise."""
    if request.param == "overlay":
        return _new_overlay_store(tmp_path / "store")
    return LayerStore(tmp_path / "store", mode="copy")


@pytest.fixture
def world_files() -> dict[str, str]:
    """The files of the world's task in /workspace (relative path -> text); a folder's
    conftest.py or a test module overrides this fixture to give its tests other files."""
    return {"README": "a task\n", "src/app.py": "print('hi')\n"}


@pytest.fixture
def world(overlay_store: LayerStore, tmp_path: Path, world_files: dict[str, str]) -> World:
    """A task whose /workspace holds `world_files`, over the host image, with its run's
    SQLite store and tree (skips, or fails under SPROUT_REQUIRE_SANDBOX=1, where the overlay
    sandbox cannot run)."""
    from tests.support.world import make_world  # only the tests that play in a world need it

    return make_world(overlay_store, tmp_path, files=world_files)


@pytest.fixture
def marker() -> str:
    """A number no other process on the machine has in its command line: `sleep 1000.NNN`."""
    return f"1000.{secrets.randbelow(10**12):012d}"


@pytest.fixture
def procs() -> Iterator[ProcessWatch]:
    """A `ProcessWatch` that kills what it found alive when the test ends."""
    watch = ProcessWatch()
    yield watch
    watch.kill_all()


@pytest.fixture(scope="session")
def shared_tmp() -> Iterator[Path]:
    """A world-readable temporary directory (pytest's own is private to root, and an
    unprivileged user must reach the image and its store)."""
    path = Path(tempfile.mkdtemp(prefix="sprout-tests-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def minimal_rootfs(shared_tmp: Path) -> Path:
    """A directory image any user can read, with /bin/sh and a handful of tools."""
    if shutil.which("ldd") is None:
        pytest.skip("ldd is needed to find the libraries of the minimal rootfs")
    root = shared_tmp / "rootfs"
    build_rootfs(root)
    return root
