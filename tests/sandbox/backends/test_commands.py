"""Any command text is survivable: it reaches the shell as a sealed script, never as an argument.

Linux caps one argument at 128 KiB, so `shell -c COMMAND` failed on long commands;
now the only bounds are `Limits.command_bytes` and the output cap, and bad text
(a NUL byte, a lone surrogate) is a BadArgument before anything runs.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sprout.sandbox import BadArgument, LayerStore, Limits, Sandbox, SandboxSetupFailed

MIB = 1024 * 1024


def heredoc_of(size: int) -> tuple[str, str]:
    """A command of exactly `size` bytes that writes most of them to big.txt; and that text."""
    head, tail = "cat > big.txt <<'EOF'\n", "\nEOF\nwc -c < big.txt\n"
    room = size - len(head) - len(tail)
    payload = ("x" * 99 + "\n") * (room // 100) + "y" * (room % 100)
    return head + payload + tail, payload + "\n"


def layer_holds(layers: LayerStore, checkpoint: str, needle: bytes) -> list[str]:
    """Paths in `checkpoint`'s own layer whose name or contents hold `needle`."""
    found = []
    root = layers.diff_dir(checkpoint)
    for directory, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            path = os.path.join(directory, name)
            if needle in name.encode() or (
                os.path.isfile(path)
                and not os.path.islink(path)
                and needle in Path(path).read_bytes()
            ):
                found.append(os.path.relpath(path, root))
    return found


def test_a_1_mib_command_runs_and_its_effect_is_checkpointed(layers):
    command, written = heredoc_of(MIB)
    assert len(command.encode()) == MIB == Limits().command_bytes
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run(command)
        assert (observation.exit_code, observation.output) == (0, f"{len(written)}\n")
        checkpoint = sandbox.checkpoint()
    assert layers.read(checkpoint, "/workspace/big.txt") == written.encode()


def test_one_argument_over_128_kib_runs(layers):
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run("printf %s " + "a" * 300_000 + " | wc -c")
    assert (observation.exit_code, observation.output) == (0, "300000\n")


def test_the_command_is_not_on_the_shells_command_line(layers):
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run("# NOT-ON-ARGV\ntr '\\0' ' ' < /proc/$$/cmdline")
    assert observation.exit_code == 0
    assert "NOT-ON-ARGV" not in observation.output
    assert "/proc/self/fd/" in observation.output


def test_a_command_over_the_bound_is_refused_before_it_runs(layers):
    with Sandbox.create(layers, limits=Limits(command_bytes=100)) as sandbox:
        with pytest.raises(BadArgument) as caught:
            sandbox.run("touch ran # " + "x" * 100)
        assert caught.value.input_name == "command"
        assert str(caught.value) == (
            "command: is 112 bytes, over the limit of 100 bytes (limits.command_bytes); "
            "write big data in several calls"
        )
        assert sandbox.checkpoint() == sandbox.parent, "nothing ran, nothing was written"
        assert sandbox.run("ls ran").exit_code != 0


def test_the_default_bound_is_one_mib(layers):
    command, _ = heredoc_of(MIB + 1)
    with Sandbox.create(layers) as sandbox:
        with pytest.raises(BadArgument, match=r"is 1,048,577 bytes, over the limit of 1,048,576"):
            sandbox.run(command)
        assert sandbox.checkpoint() == sandbox.parent


def test_a_zero_bound_leaves_the_size_unlimited(layers):
    command, written = heredoc_of(2 * MIB)
    with Sandbox.create(layers, limits=Limits(command_bytes=0)) as sandbox:
        observation = sandbox.run(command)
    assert (observation.exit_code, observation.output) == (0, f"{len(written)}\n")


def test_the_bound_is_a_limit_like_the_others():
    with pytest.raises(ValueError, match=r"limits\.command_bytes"):
        Limits(command_bytes=-1)
    assert Limits.from_json({"output_bytes": 100}).command_bytes == MIB, "older stores"
    assert Limits.from_json(Limits(command_bytes=5).__dict__).command_bytes == 5


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("touch ran; echo a\0b", "command: contains a NUL byte at offset 17"),
        ("\0", "command: contains a NUL byte at offset 0"),
        ("touch ran; echo \ud800", r"command: is not valid UTF-8: '\ud800' (a lone surrogate) "
         "at offset 16"),
        ("touch ran; echo \udcff!", r"command: is not valid UTF-8: '\udcff' (a lone surrogate) "
         "at offset 16"),
    ],
)  # fmt: skip
def test_text_the_shell_cannot_take_is_refused_before_it_runs(layers, command, problem):
    with Sandbox.create(layers) as sandbox:
        with pytest.raises(BadArgument) as caught:
            sandbox.run(command)
        assert caught.value.input_name == "command"
        assert str(caught.value) == problem
        assert sandbox.checkpoint() == sandbox.parent, "nothing ran"


def test_non_ascii_text_runs(layers):
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run("echo 'héllo ✓ 日本'")
    assert observation.output == "héllo ✓ 日本\n"


def test_stdin_is_empty_and_never_the_script(layers):
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run(
            'cat\necho after-cat\nread -r line; echo "read=$? [$line]"\n'
            "head -c 100; echo after-head"
        )
    assert observation.output == "after-cat\nread=1 []\nafter-head\n"


def test_the_script_is_in_no_checkpoint(layers):
    marker = b"SCRIPT-MARKER-7f3a9c"
    with Sandbox.create(layers) as sandbox:
        assert sandbox.run(f"true # {marker.decode()}").exit_code == 0
        assert sandbox.checkpoint() == sandbox.parent, "a call that writes nothing adds no layer"
        assert sandbox.run(f"echo written > out.txt # {marker.decode()}").exit_code == 0
        checkpoint = sandbox.checkpoint()
    assert layer_holds(layers, checkpoint, marker) == []
    assert layer_holds(layers, checkpoint, b"written") == ["workspace/out.txt"]


def test_the_script_cannot_be_changed_from_inside(layers):
    attempts = (
        'echo "echo HACKED" > "$0"; echo "write=$?"\n'
        'echo "echo HACKED" >> "$0"; echo "append=$?"\n'
        'truncate -s 0 "$0"; echo "truncate=$?"\n'
        '(exec 5<>"$0" && echo "echo HACKED" >&5); echo "rw=$?"\n'
        "echo still-the-script\n"
    )
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run(attempts)
        after = sandbox.run("echo next-call")
    lines = observation.output.splitlines()
    assert "write=1" in lines and "append=1" in lines and "truncate=1" in lines
    assert "rw=0" not in lines
    assert lines[-1] == "still-the-script"
    assert "HACKED" not in observation.output
    assert after.output == "next-call\n"


def test_an_unprivileged_user_inside_reads_but_cannot_write_the_script(layers):
    if shutil.which("setpriv"):
        switch = "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c"
    elif shutil.which("su"):
        switch = "su nobody -s /bin/sh -c"
    else:
        pytest.skip("neither setpriv nor su is installed")
    command = (
        f"# READ-BY-NOBODY\n{switch} "
        '\'id -u; head -n 1 "$0"; echo x >> "$0"; echo "append=$?"\' "$0"\n'
        "echo done"
    )
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run(command)
    lines = observation.output.splitlines()
    assert lines[:2] == ["65534", "# READ-BY-NOBODY"], observation.output
    assert lines[-2].startswith("append=") and lines[-2] != "append=0", observation.output
    assert lines[-1] == "done"


@pytest.mark.parametrize(
    ("command", "output", "exit_code"),
    [
        ("false; echo $?", "1\n", 0),
        ("(exit 42); echo $?", "42\n", 0),
        ("exit 7", "", 7),
        ("kill -TERM $$", "", 143),
        ("cd /; pwd; cd /nowhere 2>/dev/null; echo $?", "/\n1\n", 0),
        ("echo $PWD", "{workdir}\n", 0),
    ],
)
def test_status_and_workdir_are_as_with_dash_c(layers, command, output, exit_code):
    with Sandbox.create(layers) as sandbox:
        workdir = sandbox.run("pwd").output.strip()
        observation = sandbox.run(command)
    assert (observation.output, observation.exit_code) == (
        output.format(workdir=workdir),
        exit_code,
    )


def test_a_long_command_that_times_out_leaves_nothing(layers, procs, marker):
    padding = "# padding\n" * 20_000
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run(f"{padding}sleep {marker} &\nsleep {marker}", timeout=1)
        assert observation.timed_out and observation.exit_code is None
        assert procs.survivors(marker) == []
        assert sandbox.run("echo alive").output == "alive\n"


def test_an_image_without_proc_is_a_setup_failure(overlay_available, tmp_path, minimal_rootfs):
    if os.geteuid() != 0:
        pytest.skip("a root-mode store needs root")
    image = tmp_path / "image"
    shutil.copytree(minimal_rootfs, image, symlinks=True)
    (image / "proc").rmdir()
    store = LayerStore(tmp_path / "store")
    refused = pytest.raises(SandboxSetupFailed, match=r"/proc/self/fd/3 \(an image without /proc")
    with Sandbox.create(store, image=str(image), workdir="/") as sandbox, refused:
        sandbox.run("echo hi")
