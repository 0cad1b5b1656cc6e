"""`sprout gc` (the machine's) and the task folders `sprout run --ray` shipped to this
machine: it frees a copy nobody used for --keep-days, keeps one used since and one a live
process holds (however old), says why each stays, and with --dry-run frees nothing.

Copies are taken as `sprout.cluster.task_ship.unpack` takes them (`shipped_tasks.taking`), by
processes of their own, so that this test's process holds none of them; no Ray needed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.durable import file_lock
from sprout.images import shipped_tasks

DIGEST = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"
TAKER = """
import sys
from sprout.images.shipped_tasks import shipped_root, taking
root, digest = shipped_root(), sys.argv[1]
with taking(root, digest):
    (root / digest / "t").mkdir(parents=True, exist_ok=True)
    (root / digest / "t" / "test.sh").write_bytes(b"x" * 300_000)
print("taken", flush=True)
sys.stdin.read()  # the copy stays held until the test closes stdin
"""


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine cache of this test's own (the processes it starts inherit it)."""
    monkeypatch.setenv("SPROUT_CACHE", str(tmp_path / "machine-cache"))
    return tmp_path / "machine-cache"


def taken(digest: str, days_ago: float) -> Path:
    """A copy that a process took, used `days_ago`, and let go of when it ended."""
    subprocess.run([sys.executable, "-c", TAKER, digest], input="", text=True, check=True)
    return aged(shipped_tasks.shipped_root() / digest, days_ago)


def aged(copy: Path, days_ago: float) -> Path:
    when = time.time() - days_ago * 86400
    os.utime(copy, (when, when))
    return copy


@pytest.fixture
def holder() -> Iterator[subprocess.Popen[str]]:
    """A live process that took copy DIGEST and holds it (as a node's actor does)."""
    process = subprocess.Popen(
        [sys.executable, "-c", TAKER, DIGEST],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "taken\n"
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


def test_an_old_unused_copy_is_freed_and_a_recently_used_one_kept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, recent = taken(DIGEST, days_ago=10), taken(OTHER, days_ago=2)
    assert main(["gc", "-v"]) == 0
    out = capsys.readouterr().out
    assert not old.exists() and not (old.parent / "locks" / DIGEST).exists()
    assert (recent / "t" / "test.sh").is_file()
    assert f"  shipped task folder {DIGEST}/t (nobody used it for 7 days)\n" in out
    assert f"  keeps shipped task folder {OTHER}/t: used 2.0 days ago\n" in out
    assert out.splitlines()[-1].startswith("freed 0.3 MB: 0 base layers (0 layers), 1 shipped")


def test_a_copy_taken_again_is_used_from_then_on(capsys: pytest.CaptureFixture[str]) -> None:
    """A node that takes an old copy again (a new actor of the same task) notes its use."""
    copy = taken(DIGEST, days_ago=10)
    subprocess.run([sys.executable, "-c", TAKER, DIGEST], input="", text=True, check=True)
    assert main(["gc", "-v"]) == 0
    assert (copy / "t" / "test.sh").is_file()
    assert f"keeps shipped task folder {DIGEST}/t: used 0.0 days ago" in capsys.readouterr().out


def test_a_copy_a_live_process_holds_is_kept_however_old(
    holder: subprocess.Popen[str], capsys: pytest.CaptureFixture[str]
) -> None:
    copy = aged(shipped_tasks.shipped_root() / DIGEST, days_ago=30)
    assert main(["gc", "--keep-days", "0", "-v"]) == 0
    out = capsys.readouterr().out
    assert (copy / "t" / "test.sh").is_file()
    assert f"  keeps shipped task folder {DIGEST}/t: in use by process {holder.pid} (" in out
    assert "(0 layers), 0 shipped task folders," in out.splitlines()[-1]
    holder.communicate("")  # the process ends: its hold goes with it
    assert main(["gc", "--keep-days", "0"]) == 0
    assert not copy.exists()


def test_a_copy_taken_in_this_process_is_kept_while_it_lives() -> None:
    """What a node's actor does: `taking` holds the copy for the rest of the process."""
    root = shipped_tasks.shipped_root()
    with shipped_tasks.taking(root, DIGEST):
        (root / DIGEST / "t").mkdir(parents=True)
    aged(root / DIGEST, days_ago=30)
    done = shipped_tasks.collect(keep_days=0)
    assert (root / DIGEST / "t").is_dir() and done.freed == []
    assert done.kept[f"{DIGEST}/t"].startswith(f"in use by process {os.getpid()}")


def test_a_copy_is_not_taken_while_gc_collects() -> None:
    """gc holds `.collecting`: a node that comes for a copy meanwhile waits, then takes (or
    unpacks again) a whole one, so it never finds a copy gc is deleting."""
    locks = shipped_tasks.shipped_root() / "locks"
    locks.mkdir(parents=True)
    with file_lock(locks / shipped_tasks.COLLECTING):
        taker = subprocess.Popen(
            [sys.executable, "-c", TAKER, DIGEST], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        time.sleep(1.0)
        assert taker.poll() is None and not (shipped_tasks.shipped_root() / DIGEST).exists()
    assert taker.communicate(b"", timeout=30)[0] == b"taken\n"
    assert (shipped_tasks.shipped_root() / DIGEST / "t" / "test.sh").is_file()


def test_dry_run_frees_nothing_and_says_what_it_would_free(
    capsys: pytest.CaptureFixture[str],
) -> None:
    old = taken(DIGEST, days_ago=10)
    debris = shipped_tasks.shipped_root() / f".{OTHER}-k1ll3d"  # an unpacker killed mid-way
    (debris / "t").mkdir(parents=True)
    (shipped_tasks.shipped_root() / "notes.txt").write_text("not a copy: gc leaves it\n")
    assert main(["gc", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert (old / "t" / "test.sh").is_file() and debris.is_dir()
    assert f"  shipped task folder {DIGEST}/t (nobody used it for 7 days)\n" in out
    assert f"  shipped task folder .{OTHER}-k1ll3d (half unpacked by a killed process)\n" in out
    summary = out.splitlines()[-1]
    assert summary.startswith("would free 0.3 MB: 0 base layers (0 layers), 1 shipped task")
    assert summary.endswith(" (--dry-run: nothing was freed)")
    assert main(["gc"]) == 0
    assert not old.exists() and not debris.exists()
    assert (shipped_tasks.shipped_root() / "notes.txt").is_file()
