"""Task folders shipped from the driver: packed once with a digest, unpacked once per digest
on a node that lacks them, hidden from every sandbox there, and a run on a real Ray cluster
whose nodes never see the driver's folders plays as a local run does."""

from __future__ import annotations

import io
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sprout.images import shipped_tasks as shipped_copies
from sprout.models.resolve import ModelSpec
from sprout.runfolder import RunFolder
from sprout.search import Progress, RunSettings, parse_methods, run_tasks
from sprout.task import TaskError
from sprout.tasks import load_native
from sprout.tasks.digest import Digest, folder_entries
from sprout.workspace import WorkspaceError
from tests.support.requirements import require_host_image
from tests.support.taskfolders import TWO_EDITS_TEST, two_edits_task

ray = pytest.importorskip("ray", reason="sprout.cluster needs Ray: pip install 'sprout-rl[dist]'")
from sprout.cluster import task_ship  # noqa: E402  (after the skip: it needs Ray)
from sprout.cluster.host import TaskHost  # noqa: E402
from sprout.cluster.sandboxes import RaySandboxes  # noqa: E402
from sprout.cluster.task_ship import (  # noqa: E402
    ShippedFolder,
    folder_here,
    pack,
    relocated,
    shipped_digest,
    unpack,
)
from tests.support.ray_runs import TASKS, shape  # noqa: E402

ENTRIES = [".", "run.sh", "data", "data/x.txt", "latest"]
CANARY = "a harmless canary, 7f3a\n"


def a_folder(root: Path) -> Path:
    """A folder `t` with an executable, a private folder and a link inside it."""
    folder = root / "t"
    (folder / "data").mkdir(parents=True)
    (folder / "run.sh").write_text("echo hi\n")
    (folder / "data" / "x.txt").write_text("x\n")
    os.symlink("data/x.txt", folder / "latest")
    os.chmod(folder / "run.sh", 0o750)
    os.chmod(folder / "data" / "x.txt", 0o604)
    os.chmod(folder / "data", 0o700)
    return folder


def never() -> bytes:
    raise AssertionError("the stream was fetched, though its folder was unpacked here already")


def test_an_unpacked_folder_keeps_its_files_modes_and_links(tmp_path: Path):
    folder = a_folder(tmp_path / "driver")
    digest, stream = pack(folder, "t")
    assert shipped_digest(folder, "t") == digest, "the node's check agrees with the packing"

    copy = unpack(digest, "t", lambda: stream, tmp_path / "cache")

    assert copy == tmp_path / "cache" / digest / "t"
    for name in ENTRIES:
        mine, theirs = os.lstat(folder / name), os.lstat(copy / name)
        assert (theirs.st_mode, theirs.st_uid) == (mine.st_mode, mine.st_uid), name
    assert os.readlink(copy / "latest") == "data/x.txt"
    assert (copy / "latest").read_text() == "x\n"
    assert shipped_digest(copy, "t") == digest


def test_the_same_digest_is_unpacked_once(tmp_path: Path):
    folder = a_folder(tmp_path / "driver")
    digest, stream = pack(folder, "t")
    first = unpack(digest, "t", lambda: stream, tmp_path / "cache")
    (first / "marker").write_text("still the first copy\n")

    assert unpack(digest, "t", never, tmp_path / "cache") == first
    assert (first / "marker").exists(), "reused, not unpacked again"
    # beside the copy only its users' locks (`sprout.images.shipped_tasks`), no temporary folder
    assert sorted(os.listdir(tmp_path / "cache")) == [digest, "locks"]


def test_actors_unpacking_one_digest_at_once_all_see_the_whole_folder(tmp_path: Path):
    folder = a_folder(tmp_path / "driver")
    digest, stream = pack(folder, "t")
    start = threading.Barrier(6)
    seen: list[tuple[Path, bool]] = []

    def actor() -> None:
        start.wait()
        copy = unpack(digest, "t", lambda: stream, tmp_path / "cache")
        seen.append((copy, all(os.path.lexists(copy / name) for name in ENTRIES)))

    threads = [threading.Thread(target=actor) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [(tmp_path / "cache" / digest / "t", True)] * 6
    assert sorted(os.listdir(tmp_path / "cache")) == [digest, "locks"]


@pytest.mark.parametrize(
    "change",
    [
        lambda folder: (folder / "data" / "x.txt").write_text("y\n"),
        lambda folder: os.chmod(folder / "run.sh", 0o755),
        lambda folder: (folder / "new.txt").write_text(""),
        lambda folder: folder.rename(folder.with_name("u")),
    ],
    ids=["content", "mode", "a new file", "the folder's name"],
)
def test_a_changed_folder_has_a_new_digest(tmp_path: Path, change: Callable[[Path], Any]):
    folder = a_folder(tmp_path / "driver")
    before = shipped_digest(folder, "t")
    change(folder)
    after = folder if folder.exists() else folder.with_name("u")
    assert shipped_digest(after, "t") != before


def test_the_digest_is_the_rule_of_every_task_digest_with_the_folders_name_first(
    tmp_path: Path,
):
    """One rule (`sprout.tasks.digest`) for the shipped folder, the base layer's copies and
    the solution: only the folder's name is added, since a copy is unpacked under it."""
    folder = a_folder(tmp_path / "driver")
    rule = Digest(b"t\0")
    for entry in folder_entries(folder):
        rule.add(entry)
    assert shipped_digest(folder, "t") == rule.hexdigest(32)


def test_times_and_owners_are_not_the_content(tmp_path: Path):
    """The same files checked out on a node, at other times, are the driver's folder."""
    folder = a_folder(tmp_path / "driver")
    before = shipped_digest(folder, "t")
    os.utime(folder / "run.sh", (0, 0))
    os.lchown(folder / "data" / "x.txt", 1234, 1234)
    assert shipped_digest(folder, "t") == before


@pytest.mark.parametrize("target", ["../../outside.txt", "/etc/hostname", "../../t2/x"])
def test_a_link_out_of_the_folder_is_refused_naming_it(tmp_path: Path, target: str):
    folder = a_folder(tmp_path / "driver")
    os.symlink(target, folder / "data" / "leak")
    with pytest.raises(TaskError) as caught:
        pack(folder, "t")
    assert str(caught.value).startswith(
        f"t: {folder / 'data' / 'leak'}: a link to {target}, outside the task folder"
    )


def test_a_pipe_in_the_folder_is_refused_naming_it(tmp_path: Path):
    folder = a_folder(tmp_path / "driver")
    os.mkfifo(folder / "pipe")
    with pytest.raises(TaskError, match=f"t: {folder / 'pipe'}: a named pipe; a task shipped"):
        pack(folder, "t")


def test_a_relocated_task_has_every_folder_inside_moved_along(tmp_path: Path):
    task = load_native(two_edits_task(tmp_path / "tasks"))
    assert task.tests_dir is not None and task.solution_dir is not None
    moved = relocated(task, tmp_path / "node" / "two-edits")
    assert moved.path == tmp_path / "node" / "two-edits"
    assert moved.tests_dir == moved.path / "tests"
    assert moved.solution_dir == moved.path / "solution"
    assert moved.model_dump(exclude={"path", "tests_dir", "solution_dir"}) == task.model_dump(
        exclude={"path", "tests_dir", "solution_dir"}
    )
    assert relocated(task, task.path) is task


def test_a_node_uses_its_own_folder_only_when_it_has_the_shipped_digest(tmp_path: Path):
    task = load_native(two_edits_task(tmp_path / "tasks"))
    digest, stream = pack(task.path, task.id)
    shipped = ShippedFolder(digest, None)  # never fetched: the node has each folder already
    assert folder_here(task, shipped, tmp_path / "cache") == task.path
    copy = unpack(digest, task.path.name, lambda: stream, tmp_path / "cache")
    (task.path / "tests" / "test.sh").write_text("exit 0\n")  # the node's own copy differs
    assert folder_here(task, shipped, tmp_path / "cache") == copy
    shutil.rmtree(task.path)
    assert folder_here(task, shipped, tmp_path / "cache") == copy


def test_a_node_that_cannot_unpack_says_so_in_one_line(tmp_path: Path):
    task = load_native(two_edits_task(tmp_path / "tasks"))
    digest = shipped_digest(task.path, task.id)
    shutil.rmtree(task.path)
    (tmp_path / "cache").write_text("a file where the cache should be\n")
    with pytest.raises(WorkspaceError) as caught:
        folder_here(task, ShippedFolder(digest, None), tmp_path / "cache")
    (line,) = str(caught.value).splitlines()
    assert line.startswith("two-edits: the task folder shipped from the driver cannot be unpacked")
    assert str(tmp_path / "cache") in line


@pytest.mark.sandbox
def test_the_shipped_copy_is_out_of_every_sandboxs_sight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The machine's cache put where the host image shows the host (/opt): a canary beside
    the shipped tasks, and the shipped task's hidden tests, cannot be read from a sandbox,
    while a file beside the cache can (so the check could fail)."""
    require_host_image()
    shown = Path(tempfile.mkdtemp(prefix="sprout-test-", dir="/opt"))
    try:
        monkeypatch.setattr(shipped_copies, "cache_dir", lambda: shown / "cache")
        os.chmod(shown, 0o755)
        (shown / "control.txt").write_text("in sight\n")
        task = load_native(two_edits_task(tmp_path / "tasks"))
        digest, stream = pack(task.path, task.id)
        root = task_ship.cache_root()
        copy = unpack(digest, task.path.name, lambda: stream, root)  # an earlier actor's
        (root / "canary.txt").write_text(CANARY)
        os.chmod(root / "canary.txt", 0o644)
        shutil.rmtree(task.path)  # only the driver had it
        host = TaskHost("n1", str(tmp_path / "store"), [], 1, folder=ShippedFolder(digest, None))
        try:
            # the oracle's checkpoint 0: the shipped solution at /solution
            base = host.base_checkpoint(task, True)
            fork = host.fork(base)
            reads = f"cat {shown}/control.txt {root}/canary.txt {copy}/tests/test.sh"
            seen = host.run(fork, f"{reads}; ls -a {root}", 10).output
            host.run(fork, "bash /solution/solve.sh", 30)
            solved = host.seal(fork).checkpoint
            host.close(fork)
            verdict = host.verify(task, solved, base)
        finally:
            host.shutdown()
        assert "in sight" in seen, seen
        assert CANARY not in seen and TWO_EDITS_TEST.splitlines()[2] not in seen, seen
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
        assert verdict.reward == 1.0, verdict.diagnostics.log_tail  # the shipped tests ran
    finally:
        shutil.rmtree(shown)


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.checkpoints_elsewhere("RaySandboxes played alone: the run's meta names no store")
def test_tasks_only_the_driver_has_run_on_the_cluster_as_they_run_here(
    shared_cluster: Any, tmp_path: Path
):
    for folder in TASKS:
        shutil.copytree(folder, tmp_path / "tasks" / Path(folder).name, symlinks=True)
    tasks = [load_native(tmp_path / "tasks" / Path(folder).name) for folder in TASKS]
    digests = {task.id: shipped_digest(task.path, task.id) for task in tasks}
    settings = RunSettings(
        ModelSpec.parse("oracle-noise:errors=trap"),
        parse_methods("pass@2,sprout", rounds=(1,)),
        workers=4,
    )
    here = RunFolder.create_new(tmp_path / "here")
    try:
        run_tasks(tasks, here, settings, Progress(io.StringIO()))
    finally:
        here.close()

    gone: list[str] = []

    def placed(log: list[dict[str, Any]]) -> None:
        """Each task's folder goes the moment the task is placed (packed, not yet used)."""
        for entry in log:
            if entry["task"] not in gone:
                gone.append(entry["task"])
                shutil.rmtree(tmp_path / "tasks" / entry["task"])

    ray.init(address=shared_cluster.address, log_to_driver=False)
    there = RunFolder.create_new(tmp_path / "there")
    try:
        sandboxes = RaySandboxes(str(tmp_path / "stores" / "{node}"), 1, placed)
        try:
            run_tasks(tasks, there, settings, Progress(io.StringIO()), sandboxes=sandboxes)
        finally:
            sandboxes.close()
    finally:
        there.close()
        ray.shutdown()

    assert sorted(gone) == sorted(digests) and not os.listdir(tmp_path / "tasks")
    assert shape(tmp_path / "there") == shape(tmp_path / "here"), "attempts and verdicts"
    for task in tasks:  # the nodes ran them from the shipped copies
        copy = task_ship.cache_root() / digests[task.id] / task.id
        assert shipped_digest(copy, task.id) == digests[task.id]
