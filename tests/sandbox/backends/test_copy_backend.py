"""The copy backend: the portable fallback, which tracks only the workdir and says so."""

from __future__ import annotations

import os

import pytest

import sprout.sandbox.backends.copy
import sprout.sandbox.jail.modes
from sprout.sandbox import Change, LayerStore, Sandbox

pytestmark = pytest.mark.filterwarnings(
    "ignore:sprout. the copy sandbox backend gives NO isolation:RuntimeWarning"
)


@pytest.fixture
def copy_store(tmp_path) -> LayerStore:
    return LayerStore(tmp_path / "store", mode="copy")


def test_copy_backend_warns_that_it_does_not_isolate(copy_store, monkeypatch):
    monkeypatch.setattr(sprout.sandbox.backends.copy, "_warned", False)
    with pytest.warns(RuntimeWarning, match="NO isolation"), Sandbox.create(copy_store):
        pass


def test_store_falls_back_to_copy_without_overlay(tmp_path, monkeypatch):
    monkeypatch.setattr(
        sprout.sandbox.jail.modes, "overlay_unavailable_reason", lambda: "no overlayfs here"
    )
    assert LayerStore(tmp_path / "store").mode == "copy"
    assert LayerStore(tmp_path / "store").mode == "copy", "reopening keeps the stored mode"


def test_only_the_workdir_is_checkpointed(copy_store, tmp_path):
    outside = tmp_path / "outside.txt"
    with Sandbox.create(copy_store) as sandbox:
        observation = sandbox.run(f"echo inside > inside && echo leaked > {outside}")
        assert observation.exit_code == 0
        assert sandbox.changes() == [Change("/workspace/inside", "added", 7)]
        checkpoint = sandbox.checkpoint()
    # no isolation: the write outside the workdir landed on this machine, untracked
    assert outside.read_text() == "leaked\n"
    layer_files = [
        os.path.relpath(os.path.join(d, f), copy_store.diff_dir(checkpoint))
        for d, _, files in os.walk(copy_store.diff_dir(checkpoint))
        for f in files
    ]
    assert layer_files == ["workspace/inside"]


def test_calls_run_in_a_materialised_workdir(copy_store):
    with Sandbox.create(copy_store) as sandbox:
        sandbox.run("echo x > f")
        workdir = sandbox.run('printf %s "$SPROUT_WORKDIR"').output
        assert sandbox.run("pwd").output == workdir + "\n"
        assert os.path.isfile(os.path.join(workdir, "f"))
    assert not os.path.exists(workdir), "close() left the materialised tree behind"


def test_deletions_are_stored_as_marker_files(copy_store):
    with Sandbox.create(copy_store) as sandbox:
        sandbox.run("echo a > a && mkdir d && echo b > d/b")
        sandbox.checkpoint()
        sandbox.run("rm a && rm -r d")
        checkpoint = sandbox.checkpoint()
    workspace = os.path.join(copy_store.diff_dir(checkpoint), "workspace")
    assert sorted(os.listdir(workspace)) == [".wh.a", ".wh.d"]
