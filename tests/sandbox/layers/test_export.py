"""Copying a checkpoint's files out to the host (`COPY --from` of a built stage) as the
sandbox sees them: whiteouts and opaque folders respected, links inside kept as links."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox

pytestmark = pytest.mark.sandbox


def built(layers: LayerStore) -> str:
    """Two turns over the host image: the second deletes a file and replaces a folder."""
    with Sandbox.create(layers, workdir="/data") as sandbox:
        first = sandbox.run(
            "mkdir -p sub private && echo keep > keep && echo gone > gone && echo a > sub/a"
            " && chmod 700 private && ln -s /etc/hostname link && ln -s /data /via"
        )
        assert first.exit_code == 0, first.output
        sandbox.checkpoint()
        second = sandbox.run("rm gone && rm -rf sub && mkdir sub && echo b > sub/b")
        assert second.exit_code == 0, second.output
        return sandbox.checkpoint()


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_export_copies_the_merged_view(overlay_store: LayerStore, tmp_path: Path):
    checkpoint = built(overlay_store)
    out = tmp_path / "out"
    assert overlay_store.export(checkpoint, "/data", out)
    assert tree(out) == ["keep", "link", "private", "sub", "sub/b"]
    assert (out / "keep").read_text() == "keep\n"
    assert os.readlink(out / "link") == "/etc/hostname", "a link is copied, not followed"
    assert stat.S_IMODE((out / "private").stat().st_mode) == 0o700


def test_export_follows_links_on_the_way_inside_the_view(overlay_store: LayerStore, tmp_path: Path):
    checkpoint = built(overlay_store)
    assert overlay_store.export(checkpoint, "/via/keep", tmp_path / "keep")
    assert (tmp_path / "keep").read_text() == "keep\n"
    assert overlay_store.export(checkpoint, "/etc/passwd", tmp_path / "passwd")
    assert (tmp_path / "passwd").read_bytes() == Path("/etc/passwd").read_bytes()


def test_export_finds_nothing_outside_the_view(overlay_store: LayerStore, tmp_path: Path):
    checkpoint = built(overlay_store)
    assert not overlay_store.export(checkpoint, "/data/gone", tmp_path / "gone")
    assert not overlay_store.export(checkpoint, "/data/sub/a", tmp_path / "a")
    hidden = tmp_path / "secret.txt"  # pytest's folders are under /tmp: never in the view
    hidden.write_text("host only")
    assert not overlay_store.export(checkpoint, str(hidden), tmp_path / "leak")
    assert not (tmp_path / "leak").exists() and not (tmp_path / "gone").exists()
