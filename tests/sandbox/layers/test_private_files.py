"""A sealed layer's private files (`p/ID/`): never in a sandbox's view, linked into the
stores that adopt the layer, and gone exactly when the layer is: GC keeps both or frees
both, whichever store it collects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sprout.sandbox import (
    BadArgument,
    LayerStore,
    Sandbox,
    UnknownCheckpoint,
    keep_private,
    private_dir,
    private_file,
)

SECRET = b"kept for the verifier alone\n"


def sealed(layers: LayerStore) -> str:
    """A checkpoint of `layers` holding one file, with a private file beside it."""
    with Sandbox.create(layers) as sandbox:
        sandbox.run("echo visible > seen")
        checkpoint = sandbox.checkpoint()
    keep_private(layers, checkpoint, "history.bundle", SECRET)
    return checkpoint


@pytest.mark.sandbox
def test_private_files_are_in_no_sandbox_and_in_no_layer_it_mounts(overlay_store: LayerStore):
    checkpoint = sealed(overlay_store)
    path = private_file(overlay_store, checkpoint, "history.bundle")
    assert path is not None and Path(path).read_bytes() == SECRET
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert private_file(overlay_store, checkpoint, "other") is None
    mounted = [os.path.realpath(overlay_store.diff_dir(i)) for i in overlay_store.stack(checkpoint)]
    assert not any(os.path.realpath(path).startswith(folder + "/") for folder in mounted)
    with Sandbox.fork(overlay_store, checkpoint) as sandbox:
        found = sandbox.run(  # by name everywhere, by content where a store could be
            f"cat {path}; ls {overlay_store.path}; "
            r"find / \( -path /proc -o -path /sys \) -prune -o -name 'history.bundle*' -print; "
            "grep -rl 'verifier alone' /tmp /root /home /work /srv /mnt /run 2>/dev/null"
        )
    assert "verifier alone" not in found.output, found.output
    assert "history.bundle" not in found.output.replace(path, ""), found.output
    with pytest.raises(UnknownCheckpoint):
        keep_private(overlay_store, "0123456789", "history.bundle", SECRET)


def test_gc_frees_a_layers_private_files_with_it_and_only_then(layers: LayerStore):
    checkpoint = sealed(layers)
    with Sandbox.fork(layers, checkpoint) as sandbox:
        sandbox.run("echo more > more")
        above = sandbox.checkpoint()
    layers.gc(keep=[above])  # what stacks on it keeps it, and its private files
    assert private_file(layers, checkpoint, "history.bundle") is not None
    layers.gc()
    assert private_file(layers, checkpoint, "history.bundle") is None
    assert not os.path.lexists(private_dir(layers.path, checkpoint))


@pytest.mark.sandbox
def test_an_adopted_layer_links_its_private_files_and_its_gc_drops_only_the_link(
    overlay_store: LayerStore, tmp_path: Path
):
    checkpoint = sealed(overlay_store)
    run = LayerStore(tmp_path / "run")
    run.adopt(overlay_store, checkpoint)
    path = private_file(run, checkpoint, "history.bundle")
    assert path is not None and Path(path).read_bytes() == SECRET
    assert os.path.islink(private_dir(run.path, checkpoint))
    with pytest.raises(BadArgument, match="adopted from another store"):
        keep_private(run, checkpoint, "history.bundle", b"other")
    overlay_store.set_ref("base", checkpoint)
    run.gc()  # the run lets go of it: its link goes, the cache's files stay
    assert not os.path.lexists(private_dir(run.path, checkpoint))
    assert private_file(overlay_store, checkpoint, "history.bundle") is not None
    run.adopt(overlay_store, checkpoint)
    os.unlink(os.path.join(overlay_store.refs_dir, "base"))
    overlay_store.gc()  # the cache frees the layer: its private files go with it
    assert private_file(overlay_store, checkpoint, "history.bundle") is None
