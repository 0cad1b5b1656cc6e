"""Bad input fails early with an error naming the argument, and loses nothing sealed."""

from __future__ import annotations

import subprocess

import pytest

from sprout.sandbox import (
    BadArgument,
    LayerStore,
    Limits,
    Sandbox,
    SandboxError,
    StoreModeMismatch,
    UnknownCheckpoint,
)
from tests.support.repo_paths import SPROUT


@pytest.fixture
def sealed(layers: LayerStore) -> str:
    """A checkpoint holding one file, with no sandbox left open."""
    with Sandbox.create(layers) as sandbox:
        sandbox.run("echo precious > precious")
        return sandbox.checkpoint()


def assert_still_forkable(layers: LayerStore, checkpoint: str) -> None:
    with Sandbox.fork(layers, checkpoint) as fork:
        assert fork.run("cat precious").output == "precious\n"


@pytest.mark.parametrize("checkpoint", ["0123456789", "../../etc", "", "a/b", "ID WITH SPACE"])
def test_unknown_checkpoint_is_named(layers, sealed, checkpoint):
    with pytest.raises(UnknownCheckpoint) as caught:
        Sandbox.fork(layers, checkpoint)
    assert repr(checkpoint) in str(caught.value)
    assert layers.path in str(caught.value)
    assert isinstance(caught.value, KeyError)
    assert isinstance(caught.value, SandboxError)
    assert caught.value.input_name == "checkpoint_id"
    assert_still_forkable(layers, sealed)


def test_store_of_another_mode_is_refused(tmp_path):
    path = tmp_path / "copy-store"
    LayerStore(path, mode="copy")
    with pytest.raises(StoreModeMismatch, match="copy mode") as caught:
        LayerStore(path, mode="root")
    assert str(path) in str(caught.value)
    assert LayerStore(path).mode == "copy", "opening without a mode takes the stored one"


def test_overlay_store_refuses_copy_mode(overlay_store):
    with Sandbox.create(overlay_store) as sandbox:
        sandbox.run("echo precious > precious")
        sealed = sandbox.checkpoint()
    with pytest.raises(StoreModeMismatch, match="root mode"):
        LayerStore(overlay_store.path, mode="copy")
    assert_still_forkable(LayerStore(overlay_store.path), sealed)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"image": "/no/such/image/dir"}, "image"),
        ({"image": ""}, "image"),
        ({"image": 42}, "image"),
        ({"workdir": "relative/dir"}, "workdir"),
        ({"workdir": ""}, "workdir"),
        ({"env": {"A": 1}}, "env"),
        ({"env": ["A=1"]}, "env"),
        ({"network": "no"}, "network"),
        ({"limits": {"processes": 1}}, "limits"),
        ({"files": "/no/such/files/dir"}, "files"),
    ],
)
def test_create_names_the_bad_argument(layers, sealed, kwargs, argument):
    layers_before = {layer.id for layer in layers.layers()}
    with pytest.raises(BadArgument) as caught:
        Sandbox.create(layers, **kwargs)
    assert caught.value.input_name == argument
    assert str(caught.value).startswith(f"{argument}: ")
    if "image" in kwargs and isinstance(kwargs["image"], str) and kwargs["image"]:
        assert kwargs["image"] in str(caught.value)
    assert {layer.id for layer in layers.layers()} == layers_before
    assert_still_forkable(layers, sealed)


def test_image_path_with_option_separators_is_refused(layers, tmp_path):
    image = tmp_path / "has:colon"
    image.mkdir()
    with pytest.raises(BadArgument, match="image"):
        Sandbox.create(layers, image=str(image))


@pytest.mark.parametrize("command", [42, None, ["ls", "-l"], b"ls"])
def test_non_string_command_is_refused(layers, sealed, command):
    with Sandbox.fork(layers, sealed) as sandbox:
        with pytest.raises(BadArgument) as caught:
            sandbox.run(command)
        assert caught.value.input_name == "command"
        assert sandbox.run("cat precious").output == "precious\n"
    assert_still_forkable(layers, sealed)


@pytest.mark.parametrize("timeout", [0, -1, -0.5, True, "5", None, float("nan")])
def test_non_positive_timeout_is_refused(layers, sealed, timeout):
    with Sandbox.fork(layers, sealed) as sandbox:
        with pytest.raises(BadArgument) as caught:
            sandbox.run("echo hi", timeout=timeout)
        assert caught.value.input_name == "timeout"
        assert repr(timeout) in str(caught.value)
        # a fractional timeout is taken, and long enough for any machine to run the call
        assert sandbox.run("echo hi", timeout=30.5).output == "hi\n"
    assert_still_forkable(layers, sealed)


def test_store_arguments_are_checked(tmp_path):
    with pytest.raises(BadArgument, match="mode"):
        LayerStore(tmp_path / "a", mode="docker")
    with pytest.raises(BadArgument, match="max_stack"):
        LayerStore(tmp_path / "b", mode="copy", max_stack=1)
    with pytest.raises(ValueError, match="output_bytes"):
        Limits(output_bytes=10)
    with pytest.raises(ValueError, match="processes"):
        Limits(processes=-1)


def test_changes_since_a_checkpoint_not_underneath(layers, sealed):
    with Sandbox.fork(layers, sealed) as sandbox:
        sandbox.run("echo side > side")
        side = sandbox.checkpoint()
    with Sandbox.fork(layers, sealed) as sandbox:
        with pytest.raises(BadArgument) as caught:
            sandbox.changes(since=side)
        assert caught.value.input_name == "since"
        with pytest.raises(UnknownCheckpoint):
            sandbox.changes(since="0123456789")


def test_closed_sandbox_refuses_calls(layers, sealed):
    sandbox = Sandbox.fork(layers, sealed)
    sandbox.close()
    sandbox.close()  # closing twice is harmless
    with pytest.raises(SandboxError, match="closed"):
        sandbox.run("true")
    with pytest.raises(SandboxError, match="closed"):
        sandbox.checkpoint()
    assert_still_forkable(layers, sealed)


def test_cli_gc_of_a_missing_store_exits_2_with_one_line(tmp_path):
    missing = tmp_path / "nonexistent"
    result = subprocess.run([str(SPROUT), "gc", str(missing)], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert str(missing) in result.stderr
    assert not missing.exists(), "gc must not create a store it was only asked to clean"


def test_cli_gc_with_an_unknown_keep_exits_2_and_frees_nothing(layers, sealed):
    result = subprocess.run(
        [str(SPROUT), "gc", layers.path, "--orphan", "--keep", "0123456789"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert "0123456789" in result.stderr
    assert_still_forkable(layers, sealed)


def test_cli_gc_keeps_the_kept_checkpoint(layers, sealed):
    with Sandbox.fork(layers, sealed) as sandbox:
        sandbox.run("head -c 200000 /dev/zero > waste")
        waste = sandbox.checkpoint()
    result = subprocess.run(
        [str(SPROUT), "gc", layers.path, "--keep", sealed], capture_output=True, text=True
    )
    assert result.returncode == 2 and "--orphan" in result.stderr, "no run: nothing freed"
    assert LayerStore(layers.path).layer(waste)
    result = subprocess.run(
        [str(SPROUT), "gc", layers.path, "--orphan", "--keep", sealed],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("freed 0.2 MB: 1 layers")
    with pytest.raises(UnknownCheckpoint):
        LayerStore(layers.path).layer(waste)
    assert_still_forkable(LayerStore(layers.path), sealed)
