"""What a call returns: exit codes, output in the order written, and the output cap."""

from __future__ import annotations

import pytest

from sprout.sandbox import Limits, Sandbox


@pytest.mark.parametrize(
    ("command", "exit_code"),
    [
        ("true", 0),
        ("exit 3", 3),
        ("kill -9 $$", 137),
        ("kill -TERM $$", 143),
        ("no-such-command-anywhere", 127),
        ("false || exit 200", 200),
    ],
)
def test_exit_codes(layers, command, exit_code):
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run(command)
    assert observation.exit_code == exit_code
    assert not observation.timed_out


def test_stdout_and_stderr_interleave_in_order(layers):
    command = "for i in 1 2 3; do echo out$i; echo err$i >&2; done; printf tail"
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run(command)
    assert observation.output == "out1\nerr1\nout2\nerr2\nout3\nerr3\ntail"
    assert observation.output_bytes == len(observation.output)
    assert not observation.truncated


def test_large_output_keeps_head_and_tail(layers):
    command = "echo HEAD-MARK; head -c 1000000 /dev/zero | tr '\\0' x; echo; echo TAIL-MARK"
    written = len("HEAD-MARK\n") + 1_000_000 + len("\nTAIL-MARK\n")
    with Sandbox.create(layers) as sandbox:
        observation = sandbox.run(command, timeout=60)
    cap = Limits().output_bytes
    assert observation.exit_code == 0
    assert observation.truncated
    assert observation.output_bytes == written
    assert observation.output.startswith("HEAD-MARK\nxxx")
    assert observation.output.endswith("xxx\nTAIL-MARK\n")
    assert f"\n[... {written - cap} bytes of output cut ...]\n" in observation.output
    assert len(observation.output) < cap + 100


def test_output_cap_follows_limits(layers):
    limits = Limits(output_bytes=100)
    with Sandbox.create(layers, limits=limits) as sandbox:
        exact = sandbox.run("printf '%0100d' 0")
        over = sandbox.run("printf 'a%.0s' $(seq 60); printf 'b%.0s' $(seq 60)")
    assert not exact.truncated
    assert exact.output == "0" * 100
    assert over.truncated
    assert over.output_bytes == 120
    assert over.output == "a" * 50 + "\n[... 20 bytes of output cut ...]\n" + "b" * 50


def test_limits_carry_over_to_forks(layers):
    with Sandbox.create(layers, limits=Limits(output_bytes=64)) as sandbox:
        sandbox.run("echo x > f")
        checkpoint = sandbox.checkpoint()
    with Sandbox.fork(layers, checkpoint) as fork:
        assert fork.run("head -c 1000 /dev/zero").truncated
    with Sandbox.fork(layers, checkpoint, limits=Limits()) as fork:
        assert not fork.run("head -c 1000 /dev/zero").truncated


def test_environment_reaches_the_call(layers):
    with Sandbox.create(layers, env={"GREETING": "hello there"}) as sandbox:
        assert sandbox.run("echo $GREETING").output == "hello there\n"
        sandbox.run("touch f")
        checkpoint = sandbox.checkpoint()
    with Sandbox.fork(layers, checkpoint) as fork:
        assert fork.run("echo $GREETING").output == "hello there\n"
    with Sandbox.fork(layers, checkpoint, env={"GREETING": "other"}) as fork:
        assert fork.run("echo $GREETING").output == "other\n"
