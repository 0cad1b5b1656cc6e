"""Shipping layers as tar streams (`sprout.cluster.ship`), without Ray: what a store on
another machine receives is the same checkpoint, file for file, byte for byte, with the
whiteouts and opaque directories that hide what lies below."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox, keep_private, private_file
from tests.support.file_tree import files_of
from tests.support.requirements import require_host_image

pytest.importorskip("ray", reason="sprout.cluster needs Ray: pip install 'sprout-rl[dist]'")
from sprout.cluster.ship import pack, unpack  # after the skip: it needs Ray


@pytest.mark.sandbox
def test_shipped_layers_are_the_same_checkpoint_byte_for_byte(tmp_path: Path):
    require_host_image()
    source = LayerStore(tmp_path / "source")
    with Sandbox.create(source) as sandbox:
        sandbox.run("mkdir -p /workspace/d && head -c 300000 /dev/urandom > /workspace/d/blob")
        sandbox.run("echo keep > /workspace/keep && echo gone > /workspace/gone")
        first = sandbox.checkpoint()
        sandbox.run("rm /workspace/gone && rm -r /workspace/d && mkdir /workspace/d")
        sandbox.run("echo new > /workspace/d/new && ln -s keep /workspace/link")
        last = sandbox.checkpoint()
    target = LayerStore(tmp_path / "target")
    unpack(target, pack(source, first, ()))
    shipment = pack(source, last, set(target.sealed_ids()))
    above_first = source.ancestry(last)[: source.ancestry(last).index(first)]
    assert [layer.id for layer, *_ in shipment] == above_first[::-1], (
        "only the layers the target lacks travel"
    )
    unpack(target, shipment)
    for layer_id in source.ancestry(last):
        assert files_of(target, layer_id) == files_of(source, layer_id)
        assert not os.path.islink(target.diff_dir(layer_id)), "shipped, not linked"
    for path in ("/workspace/keep", "/workspace/d/new"):
        assert target.read(last, path) == source.read(last, path)
    assert target.read(last, "/workspace/gone") is None
    assert target.read(last, "/workspace/d/blob") is None
    assert target.read(first, "/workspace/d/blob") == source.read(first, "/workspace/d/blob")


@pytest.mark.sandbox
def test_a_layers_private_files_travel_with_it(tmp_path: Path):
    """The git history cut from a task's checkpoint 0 is a private file of that layer: a
    node the layer is shipped to has it for its verifier too, never in the layer's files."""
    require_host_image()
    source = LayerStore(tmp_path / "source")
    with Sandbox.create(source) as sandbox:
        sandbox.run("echo base > /workspace/base")
        base = sandbox.checkpoint()
    keep_private(source, base, "git-history.bundle", b"the cut history\n")
    target = LayerStore(tmp_path / "target")
    shipment = pack(source, base, ())
    assert [layer.id for layer, _, private in shipment if private is not None] == [base]
    unpack(target, shipment)
    shipped = private_file(target, base, "git-history.bundle")
    assert shipped is not None and Path(shipped).read_bytes() == b"the cut history\n"
    assert files_of(target, base) == files_of(source, base), "not among the layer's files"
