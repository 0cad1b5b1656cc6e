"""Following links through layers as a process inside would, never on the host."""

from __future__ import annotations

import os
from pathlib import Path

from sprout.sandbox.layers.whiteouts import MarkerFormat, read_regular_file, resolve

FMT = MarkerFormat()


def view(tmp_path: Path) -> tuple[list[str], str]:
    """An upper and a lower layer over an image, with links of every kind."""
    upper, lower, image = tmp_path / "upper", tmp_path / "lower", tmp_path / "image"
    for folder in (upper / "work", lower / "work", image / "usr/lib", image / "etc"):
        folder.mkdir(parents=True)
    (image / "usr/lib/libc.so").write_text("image libc")
    (image / "lib").symlink_to("/usr/lib")  # absolute: inside, not the host's /usr/lib
    (image / "etc/hostname").write_text("image\n")
    (lower / "work/notes").write_text("lower notes")
    (upper / "work/up").symlink_to("../etc/hostname")
    (upper / "work/escape").symlink_to(str(tmp_path / "secret"))
    (upper / "work/deep").symlink_to("../../../../../../etc/hostname")
    (upper / "work/loop1").symlink_to("loop2")
    (upper / "work/loop2").symlink_to("loop1")
    (upper / "work/file-as-dir").write_text("x")
    (tmp_path / "secret").write_text("host secret")
    os.mkfifo(upper / "work/fifo")
    return [str(upper), str(lower)], str(image)


def test_links_resolve_inside_the_view(tmp_path):
    stack, image = view(tmp_path)
    found = resolve(stack, image, "/lib/libc.so", FMT)
    assert found is not None and found.parts == ("usr", "lib", "libc.so")
    assert read_regular_file(found.found or "") == b"image libc"
    up = resolve(stack, image, "/work/up", FMT)
    assert up is not None and up.parts == ("etc", "hostname")
    deep = resolve(stack, image, "/work/deep", FMT)
    assert deep is not None and deep.parts == ("etc", "hostname"), "'..' stops at the root"
    notes = resolve(stack, image, "/work/notes", FMT)
    assert notes is not None and read_regular_file(notes.found or "") == b"lower notes"


def test_a_link_out_of_the_view_leads_nowhere(tmp_path):
    stack, image = view(tmp_path)
    assert resolve(stack, image, "/work/escape", FMT) is None
    assert resolve(stack, image, "/work/loop1", FMT) is None
    assert resolve(stack, image, "/work/file-as-dir/x", FMT) is None


def test_missing_components_are_counted_when_allowed(tmp_path):
    stack, image = view(tmp_path)
    made = resolve(stack, image, "/lib/new/deeper", FMT, allow_missing=True)
    assert made is not None and made.parts == ("usr", "lib", "new", "deeper")
    assert made.missing == 2 and made.found is None
    assert resolve(stack, image, "/lib/new/deeper", FMT) is None


def test_only_regular_files_are_read(tmp_path):
    stack, image = view(tmp_path)
    fifo = resolve(stack, image, "/work/fifo", FMT)
    assert fifo is not None and fifo.found is not None
    assert read_regular_file(fifo.found) is None, "a fifo is never opened for reading"
    assert read_regular_file(str(Path(stack[0]) / "work/up")) is None, "nor a link followed"
