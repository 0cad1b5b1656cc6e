"""`sprout gc` beside real runs: it keeps every checkpoint a run references, frees the
rest, says what (and with --dry-run frees nothing), refuses while the run is live or a
viewer has it open, and a killed run's debris (a verifier's fork with the hidden tests) goes
at its next start."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.images import ImageCache
from sprout.images.base_layers import shared_store
from sprout.runfolder import RunFolder
from sprout.sandbox import LayerStore, Sandbox, stores_by_image
from sprout.tasks import base_checkpoint_of, load_native
from sprout.tree import CheckpointRef
from tests.support.processes import ProcessWatch
from tests.support.registry_world import free_port
from tests.support.requirements import require_host_image
from tests.support.taskfolders import TRAPPED, two_edits_task
from tests.support.tool_image import greet_task

SPROUT = [sys.executable, "-m", "sprout.cli"]


def listing_of_every_checkpoint(run_dir: Path) -> dict[tuple[int, int], str]:
    """What `ls; cat *` shows at every ATTEMPT:k of the run: forks of each checkpoint."""
    run = RunFolder.open(run_dir)
    try:
        seen = {}
        for attempt in run.tree.attempts():
            for boundary in range(run.tree.last_index(attempt) + 1):
                checkpoint = run.tree.checkpoint(attempt, boundary)
                with Sandbox.fork(run.layers, checkpoint) as fork:
                    seen[attempt.id, boundary] = fork.run("ls; cat *").output
        return seen
    finally:
        run.close()


def unsealed(layers: Path) -> set[str]:
    if not (layers / "m").is_dir():
        return set()
    sealed = {name.removesuffix(".json") for name in os.listdir(layers / "m")}
    return set(os.listdir(layers / "l")) - sealed


@pytest.fixture
def finished_run(tmp_path: Path) -> Path:
    """A sprout run with branches: roots and branches, several turns each."""
    require_host_image()
    two_edits_task(tmp_path / "tasks")
    out = tmp_path / "run"
    argv = ["run", str(tmp_path / "tasks"), "--model", TRAPPED, "--method", "sprout"]
    assert main([*argv, "--rounds", "2", "--out", str(out), "--quiet"]) == 0
    return out


def stray_checkpoint(run_dir: Path) -> str:
    """A sealed layer no turn references (a sandbox a killed run sealed and never recorded)."""
    run = RunFolder.open(run_dir)
    try:
        base = run.tree.checkpoint(run.tree.attempts()[0], 0)
        with Sandbox.fork(run.layers, base) as fork:
            fork.run("head -c 200000 /dev/urandom > stray")
            return fork.checkpoint()
    finally:
        run.close()


def test_gc_of_a_run_keeps_every_checkpoint_it_references(
    finished_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = listing_of_every_checkpoint(finished_run)
    assert len(before) >= 6
    stray = stray_checkpoint(finished_run)
    layers = finished_run / "layers"
    files = sorted(os.listdir(layers / "l"))

    assert main(["gc", str(finished_run), "--dry-run", "-v"]) == 0
    printed = capsys.readouterr().out
    assert f"  layer {stray}" in printed and "would free 0.2 MB: 1 layers" in printed
    assert "nothing was freed" in printed
    assert sorted(os.listdir(layers / "l")) == files, "a dry run frees nothing"

    assert main(["gc", str(layers)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("freed 0.2 MB: 1 layers") and stray not in printed
    assert sorted(os.listdir(layers / "l")) == sorted(set(files) - {stray})
    assert listing_of_every_checkpoint(finished_run) == before
    shell = subprocess.run(
        [*SPROUT, "shell", str(finished_run), "1:1"],
        input="ls\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shell.returncode == 0, shell.stderr
    assert main(["gc", str(finished_run)]) == 0
    assert capsys.readouterr().out.startswith("freed 0.0 MB: 0 layers"), "nothing left to free"


def test_gc_keeps_the_checkpoints_of_a_run_given_with_run(
    finished_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = listing_of_every_checkpoint(finished_run)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (finished_run / "sprout.db").rename(elsewhere / "sprout.db")
    layers = finished_run / "layers"
    assert main(["gc", str(layers), "--dry-run"]) == 2
    refused = capsys.readouterr().err
    assert f"{layers}: no run folder is found for this store" in refused
    assert "nothing was freed" in refused and len(refused.strip().splitlines()) == 1
    assert main(["gc", str(layers), "--dry-run", "--orphan"]) == 0
    alone = capsys.readouterr().out
    assert not alone.startswith("would free 0.0 MB: 0 layers"), "no database: all but names"
    assert main(["gc", str(layers), "--run", str(elsewhere)]) == 0
    assert capsys.readouterr().out.startswith("freed 0.0 MB: 0 layers")
    (elsewhere / "sprout.db").rename(finished_run / "sprout.db")
    assert listing_of_every_checkpoint(finished_run) == before
    assert main(["gc", str(layers), "--run", str(tmp_path / "nowhere")]) == 2
    assert "--run" in capsys.readouterr().err


def test_gc_refuses_while_the_run_is_live_and_resume_sweeps_the_killed_verifier(
    tmp_path: Path, procs: ProcessWatch, marker: str
) -> None:
    require_host_image()
    task = two_edits_task(tmp_path / "tasks")
    # the verifier sleeps until the run is killed, within a timeout no loaded machine reaches
    test_sh, settings = task / "tests" / "test.sh", task / "task.toml"
    test_sh.write_text(
        test_sh.read_text().replace("cd /workspace", f"sleep {marker}\ncd /workspace")
    )
    settings.write_text(settings.read_text().replace("timeout_sec = 30\n", "timeout_sec = 600\n"))
    out = tmp_path / "run"
    layers = out / "layers"
    argv = [*SPROUT, "run", str(tmp_path / "tasks"), "--model", "oracle", "--method", "pass@1"]
    argv += ["--out", str(out), "--quiet"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not any((layers / "l" / i / "tests").exists() for i in unsealed(layers)):
            assert time.monotonic() < deadline, "the verifier never started"
            time.sleep(0.1)
        files = sorted(os.listdir(layers / "l"))
        gc = subprocess.run([*SPROUT, "gc", str(out)], capture_output=True, text=True)
        assert gc.returncode == 2
        assert f"in use by sprout process {process.pid} (sprout run" in gc.stderr
        assert len(gc.stderr.strip().splitlines()) == 1
        assert sorted(os.listdir(layers / "l")) == files, "nothing freed"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    procs.kill_all()  # the verifier's sleep, were it to outlive the run for a moment
    verifier = [i for i in unsealed(layers) if (layers / "l" / i / "tests").exists()]
    assert len(verifier) == 1, "the killed verifier left the hidden tests on disk"

    test_sh.write_text(test_sh.read_text().replace(f"sleep {marker}\n", ""))
    resumed = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert "sprout: swept 1 unsealed layer" in resumed.stderr
    assert not (layers / "l" / verifier[0]).exists()
    assert unsealed(layers) == set() and os.listdir(layers / "w") == []
    with sqlite3.connect(out / "sprout.db") as db:
        assert db.execute("SELECT reward FROM attempts").fetchall() == [(1.0,)]
    before = listing_of_every_checkpoint(out)
    gc = subprocess.run([*SPROUT, "gc", str(out)], capture_output=True, text=True)
    assert gc.returncode == 0, gc.stderr
    assert listing_of_every_checkpoint(out) == before
    assert LayerStore(layers).sweep().debris == []


def start_viewer(run_dir: Path) -> subprocess.Popen[str]:
    """`sprout view RUN --port P` on a free loopback port, once it listens (it takes the
    run's lease before it serves)."""
    port = free_port()
    argv = [*SPROUT, "view", str(run_dir), "--port", str(port)]
    viewer = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while True:
        if viewer.poll() is not None:
            said = viewer.stderr.read() if viewer.stderr is not None else ""
            raise AssertionError(f"sprout view exited with {viewer.returncode}: {said}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return viewer
        if time.monotonic() > deadline:
            stop_viewer(viewer)
            raise AssertionError(f"sprout view did not listen on port {port} within 30 s")
        time.sleep(0.05)


def stop_viewer(viewer: subprocess.Popen[str]) -> None:
    """Kill what is left of a viewer the test started (its own session)."""
    if viewer.poll() is None:
        os.killpg(viewer.pid, signal.SIGKILL)
    viewer.wait(timeout=10)


def gc_of(run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SPROUT, "gc", str(run_dir)], capture_output=True, text=True, timeout=120
    )


def test_gc_refuses_while_a_viewer_has_the_run_open(oracle_run: Path) -> None:
    """`sprout view` holds the run's lease from before it serves until it exits: gc names it
    and frees nothing; Ctrl-C lets go, and so does a viewer killed outright."""
    stray = stray_checkpoint(oracle_run)
    layers = LayerStore(oracle_run / "layers")
    viewer = start_viewer(oracle_run)
    try:
        refused = gc_of(oracle_run)
        assert refused.returncode == 2, refused.stderr
        assert f"in use by sprout process {viewer.pid} (sprout view" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
        assert layers.layer(stray).id == stray, "nothing freed"
        viewer.send_signal(signal.SIGINT)
        assert viewer.wait(timeout=30) == 0
    finally:
        stop_viewer(viewer)
    freed = gc_of(oracle_run)
    assert freed.returncode == 0 and freed.stdout.startswith("freed 0.2 MB: 1 layers")

    viewer = start_viewer(oracle_run)
    try:
        os.killpg(viewer.pid, signal.SIGKILL)  # no chance to let go: the kernel drops the flock
    finally:
        stop_viewer(viewer)
    assert gc_of(oracle_run).returncode == 0, "a killed viewer's lease went with it"


@pytest.mark.sandbox
def test_gc_images_keeps_an_image_a_runs_own_store_stands_on(
    tool_cache: ImageCache,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    """A store with other ids than the machine's cannot link the machine's base layers: it
    builds its own over the image, which the cache's stores know nothing of. `gc --images`
    keeps the image while that store is on the machine, says why under --dry-run, and frees
    it once the run is gone."""
    task = load_native(greet_task(tmp_path / "tasks"))
    with monkeypatch.context() as other_ids:
        other_ids.setenv("SPROUT_ID_RANGE", "1200000000:65536")
        run = LayerStore(tmp_path / "run" / "layers")
    base = base_checkpoint_of(task, run)
    assert shared_store(run) is None, "the base layer is the run's own"
    [image] = tool_cache.images()
    assert stores_by_image() == {image.digest: [run.path]}

    assert main(["gc", "--keep-days", "0", "--images", "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert f"  keeps image {image.digest}: layer stores of runs stand on it: {run.path}\n" in said
    assert said.endswith(
        "0 images (0 pulled blobs, 0 shared layer chains), 0 stores of deleted runs "
        "(--dry-run: nothing was freed)\n"
    )
    assert main(["gc", "--keep-days", "0", "--images"]) == 0
    assert tool_cache.images() == [image]
    with Sandbox.fork(run, base) as sandbox:
        assert sandbox.run("cat twice").output == "hello\nhello\n"

    shutil.rmtree(tmp_path / "run")
    assert main(["gc", "--keep-days", "0", "--images", "-v"]) == 0
    assert f"  image {image.digest}\n" not in capsys.readouterr().out
    assert tool_cache.images() == [image], "deleted or moved: nothing here can tell"
    assert main(["gc", "--keep-days", "0", "--images", "--orphan", "-v"]) == 0
    assert f"  image {image.digest}\n" in capsys.readouterr().out
    assert tool_cache.images() == [] and stores_by_image() == {}, "the gone run's note is dropped"


def on_the_store_filesystem(run_dir: Path) -> str:
    """The real path of the run's store, which the suite's default keeps on sprout's store
    filesystem as every root user's (tests/support/suite_cache.py)."""
    layers = run_dir / "layers"
    if not layers.is_symlink():
        pytest.skip("the suite runs without the store filesystem here (see its report header)")
    real = os.path.realpath(layers)
    assert "/storefs/mnt/stores/" in real
    return real


def shell_opens_every_turn(run_dir: Path) -> None:
    """`sprout shell RUN ATTEMPT:k` opens at every turn of every attempt."""
    run = RunFolder.open(run_dir)
    try:
        refs = [
            str(CheckpointRef(a.id, k))
            for a in run.tree.attempts()
            for k in range(run.tree.last_index(a) + 1)
        ]
    finally:
        run.close()
    for ref in refs:
        shell = subprocess.run(
            [*SPROUT, "shell", str(run_dir), ref], input="true\n", capture_output=True, text=True
        )
        assert shell.returncode == 0, f"sprout shell {run_dir} {ref}: {shell.stderr}"


@pytest.fixture
def oracle_run(tmp_path: Path) -> Path:
    """`sprout run TASK --model oracle --method pass@1 --out R`, as a new user does."""
    require_host_image()
    two_edits_task(tmp_path / "tasks")
    out = tmp_path / "R"
    argv = ["run", str(tmp_path / "tasks"), "--model", "oracle", "--method", "pass@1"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    return out


def test_gc_through_the_link_keeps_every_checkpoint_of_the_run(
    oracle_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_the_store_filesystem(oracle_run)
    before = listing_of_every_checkpoint(oracle_run)
    assert len(before) >= 3
    assert main(["gc", str(oracle_run / "layers")]) == 0
    assert "kept for 1 run," in capsys.readouterr().out
    assert listing_of_every_checkpoint(oracle_run) == before
    shell_opens_every_turn(oracle_run)


def test_gc_through_the_real_path_finds_the_run_by_its_owner_note(
    oracle_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = on_the_store_filesystem(oracle_run)
    before = listing_of_every_checkpoint(oracle_run)
    stray = stray_checkpoint(oracle_run)
    assert main(["gc", real, "-v"]) == 0
    said = capsys.readouterr().out
    assert f"  layer {stray}\n" in said and "kept for 1 run," in said
    assert listing_of_every_checkpoint(oracle_run) == before


def test_gc_of_a_moved_run_folder_frees_nothing_until_it_is_found(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = on_the_store_filesystem(oracle_run)
    moved = tmp_path / "moved"
    oracle_run.rename(moved)
    before = listing_of_every_checkpoint(moved)  # opening it notes the link that uses it now
    oracle_run.mkdir()
    (oracle_run / "layers").symlink_to(real)  # a stale copy of the old link, no sprout.db
    assert main(["gc", str(oracle_run / "layers")]) == 0, "found through the owner note"
    assert "kept for 1 run," in capsys.readouterr().out
    (oracle_run / "layers").unlink()
    moved.rename(tmp_path / "moved-again")  # and not opened since
    assert main(["gc", real]) == 2
    refused = capsys.readouterr().err
    assert "no run folder is found for this store" in refused and "--orphan" in refused
    assert listing_of_every_checkpoint(tmp_path / "moved-again") == before
    assert main(["gc", str(tmp_path / "moved-again")]) == 0
    assert listing_of_every_checkpoint(tmp_path / "moved-again") == before


def test_gc_of_a_store_no_run_uses_frees_only_when_told_orphan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_host_image()
    store = LayerStore(tmp_path / "notebook" / "layers")  # the Python API, no sprout.db
    with Sandbox.create(store) as sandbox:
        sandbox.run("echo one > one")
        kept = sandbox.checkpoint()
        sandbox.run("echo two > two")
        sandbox.checkpoint()
    assert main(["gc", store.path]) == 2
    refused = capsys.readouterr().err
    assert refused.count("\n") == 1 and "holds 3 sealed layers, so nothing was freed" in refused
    assert len(store.layers()) == 3
    assert main(["gc", store.path, "--orphan", "--keep", kept]) == 0
    assert capsys.readouterr().out.startswith("freed ") and len(store.layers()) == 2
