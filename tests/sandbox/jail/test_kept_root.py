"""The root a sandbox's launcher keeps mounted between calls (box.c's view): the overlay of
its layers is mounted by the first call after each checkpoint and entered by the calls after
it, so a call costs no mounts of its layers. What must not change: nothing one call leaves
outside the layers (processes, /dev/shm, a terminal, SysV IPC) reaches the next, and what
sprout writes into the upper layer between calls (`put`) is what the next call sees.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sprout.sandbox import LayerStore, Sandbox

pytestmark = pytest.mark.sandbox


def _roots(sandbox: Sandbox, commands: list[str]) -> list[str]:
    """How each of `commands` got its root, from the phases each call reports (box.c's
    --timings-fd, which `sprout bench sandbox` reads): "built" or "entered"."""
    read, write = os.pipe()
    backend: Any = sandbox._backend
    backend.timings = write
    try:
        found = []
        for command in commands:
            observation = sandbox.run(command)
            assert observation.exit_code == 0, observation.output
            said = os.read(read, 65536).decode()
            found += [
                word.removeprefix("root-") for word in said.split() if word.startswith("root-")
            ]
        return found
    finally:
        backend.timings = None
        os.close(read)
        os.close(write)


def test_calls_between_checkpoints_enter_one_mounted_root_and_a_checkpoint_mounts_another(
    overlay_store: LayerStore,
) -> None:
    with Sandbox.create(overlay_store) as sandbox:
        assert _roots(sandbox, ["true", "echo kept > kept.txt", "true"]) == [
            "built",
            "entered",
            "entered",
        ]
        sandbox.checkpoint()
        assert _roots(sandbox, ["cat kept.txt", "true"]) == ["built", "entered"]
        assert sandbox.run("cat kept.txt").output == "kept\n"


def test_a_call_leaves_no_process_shared_memory_or_ipc_object_to_the_next(
    overlay_store: LayerStore, marker: str
) -> None:
    """Checked by what the next call finds, not by the namespaces' inode numbers: the kernel
    hands a freed namespace's number to the next one it makes."""
    queues = "tail -n +2 /proc/sysvipc/msg | wc -l"
    with Sandbox.create(overlay_store) as sandbox:
        first = sandbox.run(
            f"echo left > /dev/shm/{marker}; (sleep 300 &) ; ipcmk -Q >/dev/null && {queues}"
        )
        assert first.exit_code == 0 and first.output == "1\n", first.output
        second = sandbox.run(f"ls -A /dev/shm; {queues}; grep -l '[s]leep' /proc/[0-9]*/cmdline")
        lines = second.output.splitlines()
        assert marker not in second.output
        assert lines[0] == "0", f"a message queue of the first call is left: {second.output}"
        assert all("/proc/" not in line for line in lines[1:]), second.output


def test_dev_is_read_only_and_its_devices_work(overlay_store: LayerStore) -> None:
    with Sandbox.create(overlay_store) as sandbox:
        refused = sandbox.run("touch /dev/made-here")
        assert refused.exit_code != 0 and "Read-only file system" in refused.output
        works = sandbox.run("echo gone > /dev/null && head -c 4 /dev/zero | wc -c && ls /dev/pts")
        assert works.exit_code == 0 and works.output.startswith("4\n"), works.output


def test_a_root_cannot_change_the_dev_the_next_roots_share(overlay_store: LayerStore) -> None:
    """As root every root of a sandbox attaches a clone of one /dev its launcher made: what a
    call tries on it (a new file, a mode, a remount writable) reaches no root after a
    checkpoint, and no fork."""
    attack = (
        "touch /dev/planted; chmod 777 /dev; mount -o remount,rw /dev; "
        "echo x > /dev/planted2; stat -c %a /dev"
    )
    with Sandbox.create(overlay_store) as sandbox:
        tried = sandbox.run(attack)
        assert tried.output.splitlines()[-1] == "755", tried.output
        sandbox.run("echo turn > /workspace/t")
        checkpoint = sandbox.checkpoint()
        after = sandbox.run("ls -A /dev; stat -c %a /dev; touch /dev/again")
        with Sandbox.fork(overlay_store, checkpoint) as fork:
            forked = fork.run("ls -A /dev; stat -c %a /dev")
    for seen in (after.output, forked.output):
        assert "planted" not in seen and "755" in seen.splitlines(), seen
    assert after.exit_code != 0 and "Read-only file system" in after.output, after.output


def test_what_put_writes_between_calls_is_what_the_next_call_sees(
    overlay_store: LayerStore, tmp_path: Path
) -> None:
    """The kept root is dropped before `put` writes the upper layer beneath it: an overlay
    that went on would show the names it had looked up (a file that was missing, the old
    inode of a replaced one)."""
    with Sandbox.create(overlay_store) as sandbox:
        assert sandbox.run("echo old > /workspace/a.txt && cat /workspace/a.txt").output == "old\n"
        assert sandbox.run("cat /workspace/new/b.txt").exit_code != 0
        (tmp_path / "a.txt").write_text("new\n")
        (tmp_path / "new").mkdir()
        (tmp_path / "new" / "b.txt").write_text("there\n")
        sandbox.put(tmp_path / "a.txt", "/workspace/a.txt")
        sandbox.put(tmp_path / "new", "/workspace/new")
        seen = sandbox.run("cat /workspace/a.txt /workspace/new/b.txt")
        assert seen.output == "new\nthere\n"
