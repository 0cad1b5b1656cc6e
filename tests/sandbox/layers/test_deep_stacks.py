"""Hundreds of turns: one layer each, far past the kernel's lower-layer and option limits."""

from __future__ import annotations

import errno
import itertools
import os
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from tests.support.requirements import require_host_image

TURNS = 500


@pytest.mark.sandbox
@pytest.mark.slow
def test_500_turns_each_checkpointed_stay_readable_and_forkable(overlay_store: LayerStore):
    ids = []
    with Sandbox.create(overlay_store) as sandbox:
        for turn in range(TURNS):
            observation = sandbox.run(f"echo {turn} > f{turn:03d}")
            assert observation.exit_code == 0, (turn, observation.output)
            ids.append(sandbox.checkpoint())
        assert sandbox.run("ls | wc -l").output == f"{TURNS}\n"
        contents = sandbox.run("cat f*").output.split()
        assert contents == [str(turn) for turn in range(TURNS)]
        assert sandbox.run("rm f000 && ls | wc -l").output == f"{TURNS - 1}\n"

    assert len(set(ids)) == TURNS
    assert overlay_store.layer(ids[-1]).depth == TURNS + 1
    flats = [layer for layer in overlay_store.layers() if layer.flat]
    assert len(flats) >= TURNS // overlay_store.max_stack - 1, "the store never squashed"
    assert all(len(overlay_store.stack(i)) <= overlay_store.max_stack for i in ids)

    with Sandbox.fork(overlay_store, ids[249]) as fork:
        assert fork.run("ls").output.split() == [f"f{turn:03d}" for turn in range(250)]
        fork.run("echo branch > branch")
        branch = fork.checkpoint()
    with Sandbox.fork(overlay_store, branch) as fork:
        assert fork.run("ls | wc -l; cat branch f249").output == "251\nbranch\n249\n"

    for turn, checkpoint in enumerate(ids):
        with Sandbox.fork(overlay_store, checkpoint) as fork:
            observation = fork.run(f"ls | wc -l; cat f{turn:03d}")
            assert observation.output == f"{turn + 1}\n{turn}\n", (turn, observation.output)


@pytest.mark.sandbox
def test_a_file_at_its_filesystems_link_limit_is_copied_into_the_squash(tmp_path: Path):
    """Every squash hard-links the stack's files again, so a file an attempt never touches
    gains a link each `max_stack` turns, and ext4 allows 65,000: past that, a copy. The
    store stays on the test's disk, where the padding links are made."""
    require_host_image()
    store = LayerStore(tmp_path / "store", max_stack=2, place=False)
    with Sandbox.create(store) as sandbox:
        sandbox.run("echo kept > old")
        first = sandbox.checkpoint()
        pad_to_link_limit(os.path.join(store.diff_dir(first), "workspace", "old"), tmp_path)
        for turn in range(3):
            sandbox.run(f"echo {turn} > f{turn}")
            last = sandbox.checkpoint()
    assert any(layer.flat for layer in store.layers()), "the store never squashed"
    with Sandbox.fork(store, last) as fork:
        assert fork.run("cat old f2").output == "kept\n2\n"


def pad_to_link_limit(path: str, scratch: Path) -> None:
    """Hard links to `path` in `scratch` until its filesystem refuses one more."""
    links = scratch / "links"
    links.mkdir()
    for number in itertools.count():
        try:
            os.link(path, links / str(number))
        except OSError as error:
            assert error.errno == errno.EMLINK, error
            return
