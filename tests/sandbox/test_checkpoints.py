"""Checkpoints: what a turn wrote is sealed, and every checkpoint restores exactly its state."""

from __future__ import annotations

import pytest

from sprout.sandbox import Change, Sandbox


def listing(sandbox: Sandbox, path: str = ".") -> str:
    """Every path under `path` with its type, sorted: a compact picture of a tree."""
    return sandbox.run(f"cd {path} && find . -mindepth 1 -printf '%y %p\\n' | sort").output


def test_checkpoint_seals_a_layer_on_its_parent(layers):
    with Sandbox.create(layers) as sandbox:
        base = sandbox.parent
        sandbox.run("echo one > a")
        first = sandbox.checkpoint()
        assert sandbox.parent == first
        assert first != base
        sandbox.run("echo two > b")
        second = sandbox.checkpoint()
    assert layers.layer(first).parent == base
    assert layers.layer(second).parent == first
    assert [layers.layer(i).depth for i in (base, first, second)] == [1, 2, 3]
    assert layers.ancestry(second) == [second, first, base]


def test_files_argument_fills_the_base_layer(layers, tmp_path):
    files = tmp_path / "files"
    (files / "pkg").mkdir(parents=True)
    (files / "pkg/mod.py").write_text("VALUE = 1\n")
    (files / "README").write_text("hello\n")
    with Sandbox.create(layers, files=files, workdir="/work/dir") as sandbox:
        if layers.mode != "copy":  # the copy backend runs in a host directory, not a chroot
            assert sandbox.run("pwd").output == "/work/dir\n"
        assert sandbox.run("cat README pkg/mod.py").output == "hello\nVALUE = 1\n"
        assert sandbox.changes() == []
        assert layers.layer(sandbox.parent).parent is None


def test_empty_turn_adds_no_layer(layers):
    with Sandbox.create(layers) as sandbox:
        sandbox.run("echo x > f")
        checkpoint = sandbox.checkpoint()
        count = len(layers.layers())
        assert sandbox.checkpoint() == checkpoint
        sandbox.run("cat f; ls -la; true")
        assert sandbox.checkpoint() == checkpoint
        assert sandbox.parent == checkpoint
        assert len(layers.layers()) == count


def test_an_empty_checkpoint_can_record_new_settings(layers):
    with Sandbox.create(layers, env={"MODE": "setup"}) as sandbox:
        sandbox.run("echo x > f")
        built = sandbox.checkpoint()
    with Sandbox.fork(layers, built, env={"MODE": "agent"}) as fork:
        settled = fork.checkpoint(always=True)
    assert settled != built
    assert layers.layer(settled).config.env == {"MODE": "agent"}
    with Sandbox.fork(layers, settled) as later:
        assert later.run("cat f; echo $MODE").output == "x\nagent\n"


def test_unsaved_writes_are_dropped_on_close(layers):
    with Sandbox.create(layers) as sandbox:
        sandbox.run("echo kept > kept")
        checkpoint = sandbox.checkpoint()
        sandbox.run("echo lost > lost; rm kept")
    with Sandbox.fork(layers, checkpoint) as fork:
        assert listing(fork) == "f ./kept\n"


def test_deletion_and_directory_rename_across_layers(layers):
    with Sandbox.create(layers) as sandbox:
        sandbox.run(
            "mkdir -p src/pkg/data doomed/sub && echo code > src/pkg/mod.py && "
            "echo data > src/pkg/data/x && echo old > old.txt && echo f > doomed/sub/f"
        )
        created = sandbox.checkpoint()
        # redirect_dir=off: mv of a directory from a lower layer copies it, then deletes it
        moved = sandbox.run("mv src/pkg src/renamed && rm old.txt && rm -r doomed")
        assert moved.exit_code == 0, moved.output
        renamed = sandbox.checkpoint()
        sandbox.run("mkdir src/pkg && echo new > src/pkg/fresh")
        recreated = sandbox.checkpoint()
        sandbox.run("mv src/renamed src/pkg/inner")
        nested = sandbox.checkpoint()

    with Sandbox.fork(layers, created) as fork:
        assert listing(fork) == (
            "d ./doomed\nd ./doomed/sub\nd ./src\nd ./src/pkg\nd ./src/pkg/data\n"
            "f ./doomed/sub/f\nf ./old.txt\nf ./src/pkg/data/x\nf ./src/pkg/mod.py\n"
        )
    with Sandbox.fork(layers, renamed) as fork:
        assert listing(fork) == (
            "d ./src\nd ./src/renamed\nd ./src/renamed/data\n"
            "f ./src/renamed/data/x\nf ./src/renamed/mod.py\n"
        )
        assert fork.run("cat src/renamed/mod.py src/renamed/data/x").output == "code\ndata\n"
    with Sandbox.fork(layers, recreated) as fork:
        # the new src/pkg must not show the old one's files through it
        assert fork.run("ls -A src/pkg").output == "fresh\n"
    with Sandbox.fork(layers, nested) as fork:
        assert listing(fork, "src") == (
            "d ./pkg\nd ./pkg/inner\nd ./pkg/inner/data\n"
            "f ./pkg/fresh\nf ./pkg/inner/data/x\nf ./pkg/inner/mod.py\n"
        )


def test_modes_and_symlinks_survive_checkpoint_and_fork(layers):
    with Sandbox.create(layers) as sandbox:
        sandbox.run(
            "mkdir d && echo '#!/bin/sh' > d/script && echo 'echo ran' >> d/script && "
            "chmod 751 d/script && chmod 640 d && echo x > d/private && chmod 600 d/private && "
            "chmod 2750 d && ln -s script d/link && ln -s /nowhere/at/all d/dangling"
        )
        checkpoint = sandbox.checkpoint()
    with Sandbox.fork(layers, checkpoint) as fork:
        stats = fork.run("stat -c '%n %a %F' d d/script d/private d/link d/dangling").output
        links = fork.run("readlink d/link d/dangling").output
        ran = fork.run("./d/link").output
    assert stats == (
        "d 2750 directory\nd/script 751 regular file\nd/private 600 regular file\n"
        "d/link 777 symbolic link\nd/dangling 777 symbolic link\n"
    )
    assert links == "script\n/nowhere/at/all\n"
    assert ran == "ran\n"


def test_owners_survive_checkpoint_and_fork(layers):
    if layers.mode == "rootless":
        pytest.skip("a rootless sandbox maps one uid only")
    with Sandbox.create(layers) as sandbox:
        sandbox.run("echo x > owned && chown 1234:5678 owned && mkdir dir && chown 42:43 dir")
        checkpoint = sandbox.checkpoint()
    with Sandbox.fork(layers, checkpoint) as fork:
        assert fork.run("stat -c '%n %u %g' owned dir").output == "owned 1234 5678\ndir 42 43\n"


@pytest.mark.sandbox
def test_hard_links_survive_checkpoint_and_fork(overlay_store):
    with Sandbox.create(overlay_store) as sandbox:
        sandbox.run("echo shared > first && ln first second")
        checkpoint = sandbox.checkpoint()
    with Sandbox.fork(overlay_store, checkpoint) as fork:
        stats = fork.run("stat -c '%h %i' first second").output.splitlines()
        assert stats[0] == stats[1]
        assert stats[0].split()[0] == "2"
        assert fork.run("cat second").output == "shared\n"


def test_special_files_survive_checkpoint(layers):
    with Sandbox.create(layers) as sandbox:
        sandbox.run("mkfifo pipe && echo x > plain")
        checkpoint = sandbox.checkpoint()
    with Sandbox.fork(layers, checkpoint) as fork:
        assert fork.run("stat -c '%n %F' pipe plain").output == "pipe fifo\nplain regular file\n"


def test_changes_report_added_modified_deleted(layers):
    with Sandbox.create(layers) as sandbox:
        sandbox.run("echo 1 > a && echo b > b && mkdir -p d/e && echo 1 > d/1 && echo 2 > d/e/2")
        before = sandbox.checkpoint()
        assert sandbox.changes() == []
        sandbox.run("echo 22 > a && rm b && echo ccc > c && rm -r d")
        assert sandbox.changes() == [
            Change("/workspace/a", "modified", 3),
            Change("/workspace/b", "deleted", 0),
            Change("/workspace/c", "added", 4),
            Change("/workspace/d", "deleted", 0),  # once, not once per file inside
        ]
        after = sandbox.checkpoint()
        assert sandbox.changes() == []
        assert [c.path for c in sandbox.changes(since=before)] == [
            "/workspace/a",
            "/workspace/b",
            "/workspace/c",
            "/workspace/d",
        ]
        sandbox.run("echo b > b")
        assert sandbox.changes(since=after) == [Change("/workspace/b", "added", 2)]
        # b existed at `before` too: across both turns it is only modified
        assert Change("/workspace/b", "modified", 2) in sandbox.changes(since=before)


def test_changes_of_a_directory_removed_and_recreated(layers):
    with Sandbox.create(layers) as sandbox:
        sandbox.run("mkdir d && echo 1 > d/one && echo 2 > d/two && echo k > d/kept")
        sandbox.checkpoint()
        sandbox.run("rm -r d && mkdir d && echo n > d/new && echo k > d/kept")
        changes = sandbox.changes()
    assert changes == [
        Change("/workspace/d/kept", "modified", 2),
        Change("/workspace/d/new", "added", 2),
        Change("/workspace/d/one", "deleted", 0),
        Change("/workspace/d/two", "deleted", 0),
    ]


def test_changes_under_new_directories_are_added_and_the_rest_still_compared(layers):
    """Nothing under a directory the turn created is looked up below (it cannot be there),
    which is what keeps an install of thousands of files cheap to record."""
    with Sandbox.create(layers) as sandbox:
        sandbox.run("mkdir -p d/e && echo 1 > d/e/x && echo 1 > d-x")
        sandbox.checkpoint()
        sandbox.run("mkdir -p d/new/deep d.new && echo 22 > d/e/x && echo 3 > d/new/deep/y")
        sandbox.run("echo 4 > d.new/z && echo 55 > d-x")
        changes = sandbox.changes()
    assert changes == [
        Change("/workspace/d-x", "modified", 3),
        Change("/workspace/d.new", "added", 0),
        Change("/workspace/d.new/z", "added", 2),
        Change("/workspace/d/e/x", "modified", 3),
        Change("/workspace/d/new", "added", 0),
        Change("/workspace/d/new/deep", "added", 0),
        Change("/workspace/d/new/deep/y", "added", 2),
    ]


def test_changes_across_several_turns_net_out(layers):
    with Sandbox.create(layers) as sandbox:
        start = sandbox.parent
        sandbox.run("echo tmp > scratch && echo keep > keep")
        sandbox.checkpoint()
        sandbox.run("rm scratch")
        sandbox.checkpoint()
        assert sandbox.changes(since=start) == [Change("/workspace/keep", "added", 5)]
